//! NotebookEdit: replace, insert or delete one cell of a Jupyter
//! notebook the model has read, by the cell's id or its index. The file
//! is changed only in that cell's span (see `text`), checked to parse as
//! the notebook it should be, and written atomically.

use std::borrow::Cow;
use std::path::Path;

use super::text::Layout;
use super::{Notebook, split_lines};
use crate::json::{Map, Value};
use crate::tools::files::write_atomically;
use crate::tools::input::{Fields, Schema};
use crate::tools::read::describe_io;
use crate::tools::{Access, LocalFuture, Permit, Tool, ToolContext, ToolOutput};

pub struct NotebookEdit;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Replace,
    Insert,
    Delete,
}

/// A NotebookEdit call's input, with the fields its mode needs checked.
struct Args<'a> {
    notebook_path: &'a str,
    mode: Mode,
    cell_id: Option<&'a str>,
    cell_number: Option<usize>,
    new_source: &'a str,
    cell_type: Option<&'a str>,
}

impl<'a> Args<'a> {
    fn decode(input: &'a Value) -> Result<Args<'a>, String> {
        let f = Fields::of(input)?;
        let mode = match f.opt_text("edit_mode")? {
            Some("insert") => Mode::Insert,
            Some("delete") => Mode::Delete,
            _ => Mode::Replace,
        };
        let new_source = f.opt_text("new_source")?;
        let cell_type = f.opt_text("cell_type")?;
        let cell_id = f.opt_text("cell_id")?;
        let cell_number = f
            .opt_int("cell_number")?
            .map(|n| {
                usize::try_from(n)
                    .map_err(|_| "cell_number counts from 0 and cannot be negative".to_string())
            })
            .transpose()?;
        if mode != Mode::Delete && new_source.is_none() {
            return Err("new_source is required to replace or insert a cell".into());
        }
        if mode == Mode::Insert && cell_type.is_none() {
            return Err("cell_type (code or markdown) is required to insert a cell".into());
        }
        if mode != Mode::Insert && cell_id.is_none() && cell_number.is_none() {
            return Err("say which cell: give cell_id or cell_number".into());
        }
        Ok(Args {
            notebook_path: f.text("notebook_path")?,
            mode,
            cell_id,
            cell_number,
            new_source: new_source.unwrap_or(""),
            cell_type,
        })
    }
}

impl Tool for NotebookEdit {
    fn name(&self) -> &str {
        "NotebookEdit"
    }
    fn description(&self) -> &str {
        "Change one cell of a Jupyter notebook (.ipynb). The notebook must have been Read \
         in this session and be unchanged since. Name the cell by `cell_id` (Read shows \
         each cell's id) or by `cell_number` (its 0-based index). edit_mode `replace` \
         (the default) sets the cell's source, and `cell_type` if given; a code cell's \
         outputs are cleared. `insert` adds a new cell (cell_type required) after the \
         cell named by cell_id, or at index cell_number, or first when neither is given. \
         `delete` removes the cell. Other cells are left exactly as they were."
    }
    fn input_schema(&self) -> Cow<'_, Value> {
        static SCHEMA: Schema = Schema::new(
            r#"{"type":"object","additionalProperties":false,"required":["notebook_path"],"properties":{
            "notebook_path":{"type":"string","description":"Absolute path of the .ipynb file"},
            "cell_id":{"type":"string","description":"The id of the cell to change; for insert, the new cell goes after it"},
            "cell_number":{"type":"integer","description":"0-based index of the cell, instead of cell_id; for insert, where the new cell goes"},
            "new_source":{"type":"string","description":"The cell's new source (not needed for delete)"},
            "cell_type":{"type":"string","enum":["code","markdown"],"description":"The cell's type; required for insert"},
            "edit_mode":{"type":"string","enum":["replace","insert","delete"],"description":"replace (default), insert or delete"}}}"#,
        );
        Cow::Borrowed(SCHEMA.get())
    }
    fn kind(&self) -> crate::tools::Kind {
        crate::tools::Kind::Edit
    }
    fn is_read_only(&self, _: &Value) -> bool {
        false
    }
    fn path_field(&self) -> Option<(Access, &'static str)> {
        Some((Access::Write, "notebook_path"))
    }
    fn validate(&self, input: &Value, ctx: &ToolContext) -> Result<(), String> {
        let path = ctx.resolve(Args::decode(input)?.notebook_path);
        let shown = ctx.display(&path);
        if path.extension().is_none_or(|e| e != "ipynb") {
            return Err(format!(
                "{shown} is not a Jupyter notebook (.ipynb); use Edit for other files"
            ));
        }
        if !path.exists() {
            return Err(format!(
                "{shown} does not exist; NotebookEdit changes existing notebooks (create one with Write)"
            ));
        }
        ctx.files.borrow().check_fresh(&path, &shown)
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext,
        permit: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let path = match permit.target() {
                Ok(p) => p.to_path_buf(),
                Err(e) => return ToolOutput::error(e),
            };
            let shown = ctx.display(&path);
            // Again, on the path the permit names: the file may have
            // changed while someone was deciding.
            if let Err(e) = ctx.files.borrow().check_fresh(&path, &shown) {
                return ToolOutput::error(e);
            }
            let p = path.clone();
            match smol::unblock(move || apply(&p, &input)).await {
                Ok(done) => {
                    ctx.files.borrow_mut().record(&path);
                    ToolOutput::ok(format!("{done} in {shown}"))
                }
                Err(e) => ToolOutput::error(format!("Cannot edit {shown}: {e}")),
            }
        })
    }
}

/// Makes the change and says what it did.
fn apply(path: &Path, input: &Value) -> Result<String, String> {
    let mut bytes = Vec::new();
    let file = crate::tools::read::open_regular(path)?;
    std::io::Read::read_to_end(
        &mut std::io::Read::take(file, super::MAX_BYTES as u64 + 1),
        &mut bytes,
    )
    .map_err(describe_io)?;
    if bytes.len() > super::MAX_BYTES {
        return Err("the notebook is too large to edit here".into());
    }
    let (nb, text) = Notebook::parse(&bytes)?;
    let layout = Layout::of(text)?;
    let cells = nb.cells();
    if layout.len() != cells.len() {
        return Err("the notebook's text could not be followed".into());
    }
    let args = Args::decode(input)?;
    let (new_source, cell_type) = (args.new_source, args.cell_type);
    let (updated, said, count) = match args.mode {
        Mode::Replace => {
            let at = find(&nb, &args)?;
            let cell = replaced(&cells[at], new_source, cell_type);
            let said = format!(
                "Replaced the source of cell {at}{} ({})",
                id_note(&cell),
                cell.str_field("cell_type").unwrap_or("code")
            );
            (layout.replace(text, at, &cell), said, cells.len())
        }
        Mode::Insert => {
            let at = insert_at(&nb, &args)?;
            let cell = new_cell(&nb, cell_type.unwrap_or("code"), new_source);
            let said = format!(
                "Inserted a new {} cell at index {at}{}",
                cell_type.unwrap_or("code"),
                id_note(&cell)
            );
            (layout.insert(text, at, &cell), said, cells.len() + 1)
        }
        Mode::Delete => {
            let at = find(&nb, &args)?;
            let said = format!(
                "Deleted cell {at}{} ({}); {} cells remain",
                id_note(&cells[at]),
                cells[at].str_field("cell_type").unwrap_or("code"),
                cells.len() - 1
            );
            (layout.delete(text, at), said, cells.len() - 1)
        }
    };
    // What is written must be the notebook it should be: never write a
    // file the next Read could not parse.
    let (check, _) = Notebook::parse(updated.as_bytes())
        .map_err(|e| format!("the edit would have left the notebook broken ({e}); not written"))?;
    if check.cells().len() != count {
        return Err("the edit would have miscounted the cells; not written".into());
    }
    write_atomically(path, updated.as_bytes()).map_err(describe_io)?;
    Ok(said)
}

fn id_note(cell: &Value) -> String {
    cell.str_field("id")
        .map_or(String::new(), |id| format!(" (id {id})"))
}

/// The index of the cell the input names.
fn find(nb: &Notebook, args: &Args) -> Result<usize, String> {
    let cells = nb.cells();
    let by_id = match args.cell_id {
        Some(id) => Some(find_id(cells, id)?),
        None => None,
    };
    match (by_id, args.cell_number) {
        (Some(i), Some(n)) if i != n => Err(format!(
            "cell_id names cell {i} but cell_number is {n}; give one of them"
        )),
        (Some(i), _) => Ok(i),
        (None, Some(n)) => Some(n).filter(|&n| n < cells.len()).ok_or_else(|| {
            format!(
                "there is no cell {n}: the notebook has {} cells, numbered from 0",
                cells.len()
            )
        }),
        (None, None) => Err("say which cell: give cell_id or cell_number".into()),
    }
}

/// A cell by its id; `cell-N` names cell N of a notebook without ids.
fn find_id(cells: &[Value], id: &str) -> Result<usize, String> {
    if let Some(i) = cells.iter().position(|c| c.str_field("id") == Some(id)) {
        return Ok(i);
    }
    if let Some(n) = id
        .strip_prefix("cell-")
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|&n| n < cells.len())
    {
        return Ok(n);
    }
    let ids: Vec<&str> = cells.iter().filter_map(|c| c.str_field("id")).collect();
    Err(if ids.is_empty() {
        format!("no cell has the id {id:?}: this notebook's cells have no ids; use cell_number")
    } else {
        let shown: Vec<&str> = ids.iter().take(50).copied().collect();
        format!(
            "no cell has the id {id:?}; the ids are: {}",
            shown.join(", ")
        )
    })
}

/// Where an insert puts the new cell.
fn insert_at(nb: &Notebook, args: &Args) -> Result<usize, String> {
    let len = nb.cells().len();
    match (args.cell_id, args.cell_number) {
        (Some(_), Some(_)) => Err("for insert, give cell_id or cell_number, not both".into()),
        (Some(id), None) => Ok(find_id(nb.cells(), id)? + 1),
        (None, Some(n)) => Some(n).filter(|&n| n <= len).ok_or_else(|| {
            format!("cell_number {n} is past the end: the notebook has {len} cells")
        }),
        (None, None) => Ok(0),
    }
}

/// The cell with its new source (and type): outputs of a code cell are
/// cleared, as they no longer belong to its source.
fn replaced(cell: &Value, source: &str, cell_type: Option<&str>) -> Value {
    let mut m = cell.as_object().cloned().unwrap_or_default();
    let sorted = is_sorted(&m);
    let source_value = if matches!(m.get("source"), Some(Value::String(_))) {
        Value::from(source)
    } else {
        split_lines(source)
    };
    m.insert("source", source_value);
    if let Some(t) = cell_type {
        m.insert("cell_type", t);
    }
    if m.get("cell_type").and_then(Value::as_str) == Some("code") {
        m.insert("execution_count", Value::Null);
        m.insert("outputs", Value::Array(Vec::new()));
    } else {
        m.remove("execution_count");
        m.remove("outputs");
    }
    if sorted {
        m = sort(m);
    }
    Value::Object(m)
}

/// A fresh cell, keys in the order Jupyter writes them.
fn new_cell(nb: &Notebook, cell_type: &str, source: &str) -> Value {
    let mut m = Map::new();
    m.insert("cell_type", cell_type);
    if cell_type == "code" {
        m.insert("execution_count", Value::Null);
    }
    if nb.has_ids() {
        m.insert("id", fresh_id(nb.cells()));
    }
    m.insert("metadata", Value::Object(Map::new()));
    if cell_type == "code" {
        m.insert("outputs", Value::Array(Vec::new()));
    }
    m.insert("source", split_lines(source));
    Value::Object(m)
}

/// An id no cell has: eight hex digits, as nbformat allows.
fn fresh_id(cells: &[Value]) -> String {
    loop {
        let id = format!("{:08x}", fastrand::u32(..));
        if !cells.iter().any(|c| c.str_field("id") == Some(&id)) {
            return id;
        }
    }
}

fn is_sorted(m: &Map) -> bool {
    let keys: Vec<&str> = m.iter().map(|(k, _)| k).collect();
    keys.windows(2).all(|w| w[0] <= w[1])
}

fn sort(m: Map) -> Map {
    let mut entries: Vec<(String, Value)> =
        m.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Map::new();
    for (k, v) in entries {
        out.insert(k, v);
    }
    out
}
