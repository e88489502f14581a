//! Notebooks read and edited through the tools, on real notebook files.

use super::*;
use crate::json::parse;
use crate::media::samples;
use crate::obj;
use crate::tools::read::Read;
use crate::tools::testing::{context, run};

fn setup() -> (crate::tools::ToolContext, std::path::PathBuf, String) {
    let (ctx, dir) = context();
    let text = samples::notebook(&samples::image("png", 40, 30));
    std::fs::write(dir.join("nb.ipynb"), &text).unwrap();
    (ctx, dir, text)
}

fn cells_of(text: &str) -> Vec<Value> {
    parse(text)
        .unwrap()
        .get("cells")
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn read_shows_cells_outputs_and_images() {
    let (ctx, _, _) = setup();
    let out = run(&Read, &ctx, obj! { "file_path" => "nb.ipynb" });
    assert!(!out.is_error, "{}", out.content);
    let c = &out.content;
    assert!(
        c.starts_with("Jupyter notebook: 5 cells, python (nbformat 4.5)."),
        "{c}"
    );
    assert!(c.contains("<cell index=\"0\" id=\"intro\" type=\"markdown\">\n# Sales report\n"));
    assert!(c.contains("café included."));
    assert!(c.contains("<cell index=\"1\" id=\"load\" type=\"code\" execution_count=\"1\">"));
    assert!(c.contains("<output type=\"stream\" name=\"stdout\">\nloaded 3 rows\n</output>"));
    // text/plain wins over text/html.
    assert!(
        c.contains("<output type=\"execute_result\">\n42\n</output>"),
        "{c}"
    );
    assert!(
        c.contains("---\nZeroDivisionError: division by zero\n</output>"),
        "{c}"
    );
    assert!(!c.contains('\x1b'), "colour codes are stripped");
    assert!(c.contains("<Figure size 640x480 with 1 Axes>"));
    assert!(c.contains("[PNG image, 40x30 pixels"), "{c}");
    assert!(c.contains("attached as image 1]"));
    assert_eq!(out.images.len(), 1);
    assert_eq!(out.images[0].0, "image/png");
    let png = crate::media::decode(&out.images[0].1).unwrap();
    assert_eq!(crate::media::image::check(&png).unwrap().width, 40);
    assert!(c.contains("<cell index=\"4\" id=\"empty\" type=\"code\">\n</cell>"));
}

#[test]
fn read_pages_a_notebook_by_cells() {
    let (ctx, _, _) = setup();
    let out = run(
        &Read,
        &ctx,
        obj! { "file_path" => "nb.ipynb", "offset" => 2i64, "limit" => 1i64 },
    );
    assert!(out.content.contains("<cell index=\"2\" id=\"oops\""));
    assert!(!out.content.contains("index=\"1\"") && !out.content.contains("index=\"3\""));
    assert!(
        out.content
            .contains("showing cells 2-2 of 5; Read with offset 3"),
        "{}",
        out.content
    );
    assert!(out.images.is_empty());
    let out = run(
        &Read,
        &ctx,
        obj! { "file_path" => "nb.ipynb", "offset" => 9i64 },
    );
    assert!(
        out.content.contains("no cell at index 9"),
        "{}",
        out.content
    );
}

#[test]
fn broken_notebooks_are_refused_clearly() {
    let (ctx, dir) = context();
    let cases: [(&str, &[u8], &str); 5] = [
        ("a.ipynb", b"{\"cells\": [", "not valid JSON"),
        ("b.ipynb", b"[1, 2]", "not a Jupyter notebook"),
        ("c.ipynb", b"{\"metadata\": {}}", "no \"cells\" list"),
        (
            "d.ipynb",
            b"{\"worksheets\": [], \"nbformat\": 3}",
            "nbformat 3",
        ),
        (
            "e.ipynb",
            b"{\"cells\": [{\"source\": \"x\"}]}",
            "cell 0 is not a notebook cell",
        ),
    ];
    for (name, body, want) in cases {
        std::fs::write(dir.join(name), body).unwrap();
        let out = run(&Read, &ctx, obj! { "file_path" => name });
        assert!(
            out.is_error && out.content.contains(want),
            "{name}: {}",
            out.content
        );
    }
    std::fs::write(dir.join("bin.ipynb"), [0xffu8, 0xfe, 0, 1]).unwrap();
    let out = run(&Read, &ctx, obj! { "file_path" => "bin.ipynb" });
    assert!(
        out.is_error && out.content.contains("not UTF-8"),
        "{}",
        out.content
    );
}

#[test]
fn edits_need_a_read_first_and_a_fresh_file() {
    let (ctx, dir, _) = setup();
    let edit = obj! { "notebook_path" => "nb.ipynb", "cell_id" => "oops", "new_source" => "1 / 2" };
    let out = run(&NotebookEdit, &ctx, edit.clone());
    assert!(
        out.is_error && out.content.contains("has not been read"),
        "{}",
        out.content
    );
    run(&Read, &ctx, obj! { "file_path" => "nb.ipynb" });
    std::thread::sleep(std::time::Duration::from_millis(20));
    let changed = std::fs::read_to_string(dir.join("nb.ipynb")).unwrap() + "\n";
    std::fs::write(dir.join("nb.ipynb"), changed).unwrap();
    let out = run(&NotebookEdit, &ctx, edit.clone());
    assert!(
        out.is_error && out.content.contains("modified since"),
        "{}",
        out.content
    );
    run(&Read, &ctx, obj! { "file_path" => "nb.ipynb" });
    let out = run(&NotebookEdit, &ctx, edit);
    assert!(!out.is_error, "{}", out.content);
}

#[test]
fn replace_changes_one_cell_and_leaves_every_other_byte() {
    let (ctx, dir, before) = setup();
    run(&Read, &ctx, obj! { "file_path" => "nb.ipynb" });
    let out = run(
        &NotebookEdit,
        &ctx,
        obj! { "notebook_path" => "nb.ipynb", "cell_id" => "oops", "new_source" => "total = 1 / 2\nprint(total)" },
    );
    assert!(!out.is_error, "{}", out.content);
    assert!(
        out.content
            .contains("Replaced the source of cell 2 (id oops) (code)"),
        "{}",
        out.content
    );
    let after = std::fs::read_to_string(dir.join("nb.ipynb")).unwrap();
    let (old, new) = (cells_of(&before), cells_of(&after));
    assert_eq!(new.len(), 5);
    for i in [0, 1, 3, 4] {
        assert_eq!(old[i], new[i], "cell {i}");
    }
    let cell = &new[2];
    assert_eq!(
        cell.get("source").unwrap().to_json(),
        r#"["total = 1 / 2\n","print(total)"]"#
    );
    assert_eq!(
        cell.get("outputs").unwrap().to_json(),
        "[]",
        "stale outputs go"
    );
    assert!(cell.get("execution_count").unwrap().is_null());
    // Byte for byte: the file is the old one with that cell's text swapped.
    let old_layout = text::Layout::of(&before).unwrap();
    let new_layout = text::Layout::of(&after).unwrap();
    let span = |t: &str, l: &text::Layout, i: usize| l.raw(t, i).to_string();
    let start = before.find(&span(&before, &old_layout, 2)).unwrap();
    assert_eq!(&after[..start], &before[..start]);
    let old_tail = &before[start + span(&before, &old_layout, 2).len()..];
    assert!(after.ends_with(old_tail));
    assert_eq!(
        span(&after, &new_layout, 2),
        "{\n   \"cell_type\": \"code\",\n   \"execution_count\": null,\n   \"id\": \"oops\",\n   \"metadata\": {},\n   \"outputs\": [],\n   \"source\": [\n    \"total = 1 / 2\\n\",\n    \"print(total)\"\n   ]\n  }"
    );
}

#[test]
fn replace_can_change_the_type_and_keeps_metadata() {
    let (ctx, dir, _) = setup();
    run(&Read, &ctx, obj! { "file_path" => "nb.ipynb" });
    let out = run(
        &NotebookEdit,
        &ctx,
        obj! { "notebook_path" => "nb.ipynb", "cell_number" => 1i64, "new_source" => "Notes", "cell_type" => "markdown" },
    );
    assert!(!out.is_error, "{}", out.content);
    let after = std::fs::read_to_string(dir.join("nb.ipynb")).unwrap();
    let cell = &cells_of(&after)[1];
    assert_eq!(cell.str_field("cell_type"), Some("markdown"));
    assert!(cell.get("outputs").is_none() && cell.get("execution_count").is_none());
    assert_eq!(
        cell.get("metadata").unwrap().to_json(),
        r#"{"scrolled":true,"zoom":1.0}"#.replace("1.0", "1")
    );
    assert!(
        after.contains("\"zoom\": 1.0"),
        "floats written as Python writes them"
    );
}

#[test]
fn insert_and_delete_round_trip_to_the_same_file() {
    let (ctx, dir, before) = setup();
    run(&Read, &ctx, obj! { "file_path" => "nb.ipynb" });
    let out = run(
        &NotebookEdit,
        &ctx,
        obj! { "notebook_path" => "nb.ipynb", "cell_id" => "load", "edit_mode" => "insert", "cell_type" => "markdown", "new_source" => "## Étape 2\nMore." },
    );
    assert!(!out.is_error, "{}", out.content);
    assert!(
        out.content
            .contains("Inserted a new markdown cell at index 2"),
        "{}",
        out.content
    );
    let after = std::fs::read_to_string(dir.join("nb.ipynb")).unwrap();
    let cells = cells_of(&after);
    assert_eq!(cells.len(), 6);
    let new = &cells[2];
    assert_eq!(super::joined(new.get("source")), "## Étape 2\nMore.");
    let id = new.str_field("id").unwrap().to_string();
    assert_eq!(id.len(), 8, "nbformat 4.5 cells get ids");
    assert!(
        after.contains("\"## Étape 2\\n\","),
        "non-ASCII kept as it is"
    );
    // Deleting it again gives back the very same bytes.
    let out = run(
        &NotebookEdit,
        &ctx,
        obj! { "notebook_path" => "nb.ipynb", "cell_id" => id.as_str(), "edit_mode" => "delete" },
    );
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(dir.join("nb.ipynb")).unwrap(),
        before
    );

    // At the ends, by number: first and last.
    for (n, at) in [(0i64, 0usize), (5, 5)] {
        let out = run(
            &NotebookEdit,
            &ctx,
            obj! { "notebook_path" => "nb.ipynb", "cell_number" => n, "edit_mode" => "insert", "cell_type" => "code", "new_source" => "x = 1" },
        );
        assert!(!out.is_error, "{}", out.content);
        let cells = cells_of(&std::fs::read_to_string(dir.join("nb.ipynb")).unwrap());
        assert_eq!(super::joined(cells[at].get("source")), "x = 1");
        assert_eq!(cells[at].get("outputs").unwrap().to_json(), "[]");
        let out = run(
            &NotebookEdit,
            &ctx,
            obj! { "notebook_path" => "nb.ipynb", "cell_number" => at as i64, "edit_mode" => "delete" },
        );
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            std::fs::read_to_string(dir.join("nb.ipynb")).unwrap(),
            before
        );
    }
}

#[test]
fn deleting_every_cell_and_inserting_into_an_empty_notebook() {
    let (ctx, dir) = context();
    let text = "{\n \"cells\": [\n  {\n   \"cell_type\": \"raw\",\n   \"metadata\": {},\n   \"source\": \"x\"\n  }\n ],\n \"metadata\": {},\n \"nbformat\": 4,\n \"nbformat_minor\": 2\n}\n";
    std::fs::write(dir.join("n.ipynb"), text).unwrap();
    run(&Read, &ctx, obj! { "file_path" => "n.ipynb" });
    let out = run(
        &NotebookEdit,
        &ctx,
        obj! { "notebook_path" => "n.ipynb", "cell_id" => "cell-0", "edit_mode" => "delete" },
    );
    assert!(!out.is_error, "{}", out.content);
    let empty = std::fs::read_to_string(dir.join("n.ipynb")).unwrap();
    assert!(
        empty.starts_with("{\n \"cells\": [],\n \"metadata\""),
        "{empty}"
    );
    let out = run(
        &NotebookEdit,
        &ctx,
        obj! { "notebook_path" => "n.ipynb", "edit_mode" => "insert", "cell_type" => "code", "new_source" => "" },
    );
    assert!(!out.is_error, "{}", out.content);
    let one = std::fs::read_to_string(dir.join("n.ipynb")).unwrap();
    assert!(one.starts_with("{\n \"cells\": [\n  {\n   \"cell_type\": \"code\",\n   \"execution_count\": null,\n   \"metadata\": {},\n   \"outputs\": [],\n   \"source\": []\n  }\n ],"), "{one}");
    assert!(!one.contains("\"id\""), "nbformat 4.2 has no cell ids");
}

#[test]
fn bad_edits_say_what_is_wrong_and_change_nothing() {
    let (ctx, dir, before) = setup();
    run(&Read, &ctx, obj! { "file_path" => "nb.ipynb" });
    let cases = [
        (
            obj! { "notebook_path" => "nb.ipynb", "cell_id" => "nope", "new_source" => "x" },
            "no cell has the id \"nope\"; the ids are: intro, load, oops, plot, empty",
        ),
        (
            obj! { "notebook_path" => "nb.ipynb", "cell_number" => 7i64, "new_source" => "x" },
            "there is no cell 7",
        ),
        (
            obj! { "notebook_path" => "nb.ipynb", "new_source" => "x" },
            "give cell_id or cell_number",
        ),
        (
            obj! { "notebook_path" => "nb.ipynb", "cell_id" => "load" },
            "new_source is required",
        ),
        (
            obj! { "notebook_path" => "nb.ipynb", "edit_mode" => "insert", "new_source" => "x" },
            "cell_type (code or markdown) is required",
        ),
        (
            obj! { "notebook_path" => "nb.ipynb", "cell_id" => "load", "cell_number" => 3i64, "new_source" => "x" },
            "cell_id names cell 1 but cell_number is 3",
        ),
        (
            obj! { "notebook_path" => "nb.ipynb", "cell_number" => 9i64, "edit_mode" => "insert", "cell_type" => "code", "new_source" => "x" },
            "past the end",
        ),
        (
            obj! { "notebook_path" => "nb.ipynb", "cell_number" => 1i64, "edit_mode" => "replace", "cell_type" => "raw", "new_source" => "x" },
            "must be one of",
        ),
        (
            obj! { "notebook_path" => "notes.txt", "cell_number" => 0i64, "new_source" => "x" },
            "not a Jupyter notebook (.ipynb)",
        ),
        (
            obj! { "notebook_path" => "missing.ipynb", "cell_number" => 0i64, "new_source" => "x" },
            "does not exist",
        ),
    ];
    for (input, want) in cases {
        let out = run(&NotebookEdit, &ctx, input.clone());
        assert!(
            out.is_error && out.content.contains(want),
            "{input:?}: {}",
            out.content
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("nb.ipynb")).unwrap(),
        before
    );
    // A notebook that became broken JSON after it was read: refused, untouched.
    std::fs::write(dir.join("bad.ipynb"), "{\"cells\": []}").unwrap();
    run(&Read, &ctx, obj! { "file_path" => "bad.ipynb" });
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(dir.join("bad.ipynb"), "{\"cells\": [").unwrap();
    ctx.files.borrow_mut().record(&dir.join("bad.ipynb"));
    let out = run(
        &NotebookEdit,
        &ctx,
        obj! { "notebook_path" => "bad.ipynb", "edit_mode" => "insert", "cell_type" => "code", "new_source" => "x" },
    );
    assert!(
        out.is_error && out.content.contains("not valid JSON"),
        "{}",
        out.content
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("bad.ipynb")).unwrap(),
        "{\"cells\": ["
    );
}

#[test]
fn notebook_edit_is_a_write_of_its_path() {
    let input =
        obj! { "notebook_path" => "/x/nb.ipynb", "cell_number" => 0i64, "new_source" => "" };
    let tool = NotebookEdit;
    assert!(!crate::tools::Tool::is_read_only(&tool, &input));
    let ctx = crate::tools::ToolContext::new(
        "/x".into(),
        std::path::PathBuf::from("/x"),
        crate::abort::Abort::new(),
    );
    assert!(!crate::tools::Tool::is_concurrency_safe(
        &tool, &input, &ctx
    ));
    assert_eq!(crate::tools::Tool::kind(&tool), crate::tools::Kind::Edit);
    assert_eq!(
        crate::tools::Tool::paths(&tool, &input),
        [crate::tools::PathUse::new(
            crate::tools::Access::Write,
            "/x/nb.ipynb"
        )]
    );
}

#[test]
fn a_long_notebook_stops_at_a_cell_edge_with_its_images_in_step() {
    let (ctx, dir) = context();
    let png = crate::media::encode(&samples::image("png", 8, 8));
    let big = "x".repeat(30_000);
    let cells: Vec<String> = (0..12)
        .map(|i| {
            format!(
                r#"{{"cell_type":"code","id":"c{i}","metadata":{{}},"execution_count":1,"source":"print({i})","outputs":[{{"output_type":"display_data","metadata":{{}},"data":{{"image/png":"{png}","text/plain":"{big}"}}}}]}}"#
            )
        })
        .collect();
    let text = format!(
        r#"{{"cells":[{}],"metadata":{{}},"nbformat":4,"nbformat_minor":5}}"#,
        cells.join(",")
    );
    std::fs::write(dir.join("long.ipynb"), text).unwrap();
    let out = run(&Read, &ctx, obj! { "file_path" => "long.ipynb" });
    assert!(!out.is_error, "{}", out.content);
    let shown = out.content.matches("<cell index=").count();
    assert!((1..12).contains(&shown), "{shown} cells shown");
    assert_eq!(out.images.len(), shown, "one image per shown cell");
    assert!(
        out.content
            .contains("more characters of this output not shown")
    );
    assert!(
        out.content
            .contains(&format!("Read with offset {shown} to see more")),
        "{}",
        &out.content[out.content.len() - 200..]
    );
    let rest = run(
        &Read,
        &ctx,
        obj! { "file_path" => "long.ipynb", "offset" => shown as i64 },
    );
    assert!(rest.content.contains(&format!("<cell index=\"{shown}\"")));
}

#[test]
fn a_notebook_changed_while_the_edit_waited_is_not_overwritten() {
    use crate::tools::Tool as _;
    let (ctx, dir, _) = setup();
    run(&Read, &ctx, obj! { "file_path" => "nb.ipynb" });
    let input =
        obj! { "notebook_path" => "nb.ipynb", "cell_id" => "load", "new_source" => "x = 1" };
    assert!(NotebookEdit.validate(&input, &ctx).is_ok());
    // Someone saves the notebook while the question is on screen.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let theirs = samples::notebook(&samples::image("png", 9, 9));
    std::fs::write(dir.join("nb.ipynb"), &theirs).unwrap();
    let permit = crate::policy::Permit::for_tests(vec![dir.join("nb.ipynb")]);
    let out = smol::block_on(NotebookEdit.call(input, &ctx, &permit));
    assert!(
        out.is_error && out.content.contains("modified since"),
        "{}",
        out.content
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("nb.ipynb")).unwrap(),
        theirs
    );
}
