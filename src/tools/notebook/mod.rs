//! Jupyter notebooks (nbformat 4): reading one as its cells and outputs
//! (for Read), and changing one cell at a time (NotebookEdit).

mod edit;
mod render;
mod text;

pub use edit::NotebookEdit;
pub(crate) use render::read;

use crate::json::Value;

/// Larger notebooks are refused (outputs with images make them big, but
/// not this big).
pub(crate) const MAX_BYTES: usize = 64 << 20;

/// A parsed notebook and its text, as read from disk.
pub(crate) struct Notebook {
    pub value: Value,
}

impl Notebook {
    /// Parses a notebook, or says precisely why the bytes are not one.
    pub fn parse(bytes: &[u8]) -> Result<(Notebook, &str), String> {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| "it is not UTF-8 text, so it is not a notebook (.ipynb is JSON)")?;
        let value = crate::json::parse(text).map_err(|e| {
            format!("it is not valid JSON ({e}); a Jupyter notebook (.ipynb) is a JSON document")
        })?;
        if !matches!(value, Value::Object(_)) {
            return Err("it is JSON but not a Jupyter notebook (not an object)".into());
        }
        if value.get("worksheets").is_some() {
            return Err("it is an nbformat 3 notebook; convert it first with \
                 `jupyter nbconvert --to notebook --nbformat 4`"
                .into());
        }
        let Some(cells) = value.get("cells").and_then(Value::as_array) else {
            return Err("it is JSON but not a Jupyter notebook (it has no \"cells\" list)".into());
        };
        for (i, c) in cells.iter().enumerate() {
            if c.str_field("cell_type").is_none() {
                return Err(format!(
                    "it is damaged: cell {i} is not a notebook cell (it has no cell_type)"
                ));
            }
        }
        Ok((Notebook { value }, text))
    }

    pub fn cells(&self) -> &[Value] {
        self.value
            .get("cells")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// The kernel's language, as the notebook's metadata names it.
    pub fn language(&self) -> &str {
        let meta = self.value.get("metadata");
        meta.and_then(|m| m.get("language_info"))
            .and_then(|l| l.str_field("name"))
            .or_else(|| {
                meta.and_then(|m| m.get("kernelspec"))
                    .and_then(|k| k.str_field("language"))
            })
            .unwrap_or("python")
    }

    /// (nbformat, nbformat_minor).
    pub fn version(&self) -> (i64, i64) {
        let n = |k: &str| self.value.get(k).and_then(Value::as_i64).unwrap_or(0);
        (n("nbformat"), n("nbformat_minor"))
    }

    /// Cells have ids from nbformat 4.5 on.
    pub fn has_ids(&self) -> bool {
        let (major, minor) = self.version();
        major > 4 || (major == 4 && minor >= 5)
    }
}

/// A multiline field: nbformat stores a string or a list of lines.
pub(crate) fn joined(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

/// Text as nbformat's list of lines, each keeping its newline.
pub(crate) fn split_lines(text: &str) -> Value {
    Value::Array(
        text.split_inclusive('\n')
            .map(|l| Value::from(l.to_string()))
            .collect(),
    )
}

#[cfg(test)]
mod tests;
