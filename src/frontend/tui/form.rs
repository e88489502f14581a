//! An MCP server's form (elicitation) as a run of dialogs, one a field,
//! the way AskUserQuestion asks: the server's message goes to the
//! scrollback, each field offers its choices (or a field to type in, its
//! default, leaving it out), and a last dialog sends, declines or
//! cancels. Esc anywhere cancels.

use super::Tui;
use super::dialog::{Dialog, Picked};
use crate::frontend::preview::visible;
use crate::json::{Map, Value};
use crate::mcp::elicit::{Elicited, Field, Form, Kind, shown};

/// What one field's dialog came to.
enum Got {
    Value(Value),
    Omit,
    Cancel,
}

pub(super) async fn fill(tui: &Tui, server: &str, form: &Form) -> Elicited {
    let mut head = vec![tui.paint("1", &format!("MCP server {} asks:", visible(server)))];
    head.extend(form.message.lines().map(|l| format!("  {}", visible(l))));
    tui.commit(head);
    let mut answers = Map::new();
    for f in &form.fields {
        match field(tui, f).await {
            Got::Value(v) => answers.insert(f.name.as_str(), v),
            Got::Omit => {}
            Got::Cancel => return Elicited::Cancel,
        }
    }
    let summary: Vec<String> = answers
        .iter()
        .map(|(k, v)| format!("  {}: {}", visible(k), visible(&shown(v))))
        .collect();
    let options = vec![
        "Send these answers".to_string(),
        "Decline (send nothing)".to_string(),
        "Cancel".to_string(),
    ];
    let title = format!("Send to {}?", visible(server));
    match tui.ask(summary, Dialog::new(title, options, None)).await {
        Picked::Option { index: 0, .. } => Elicited::Accept(answers),
        Picked::Option { index: 1, .. } => Elicited::Decline,
        _ => Elicited::Cancel,
    }
}

/// One field: asked again, with the reason, until its answer fits.
async fn field(tui: &Tui, f: &Field) -> Got {
    let mut why = String::new();
    loop {
        let mut title = visible(&f.label);
        if !f.description.is_empty() {
            title.push_str(&format!(" — {}", visible(&f.description)));
        }
        if f.required {
            title.push_str(" (required)");
        }
        if !why.is_empty() {
            title.push_str(&format!("  [{why}]"));
        }
        let mut options: Vec<String> = Vec::new();
        let mut values: Vec<Option<Value>> = Vec::new();
        let mut typed_at = None;
        match &f.kind {
            Kind::Choice {
                choices,
                multi: false,
            } => {
                for (v, t) in choices {
                    options.push(visible(t));
                    values.push(Some(Value::from(v.as_str())));
                }
            }
            Kind::Bool => {
                options.extend(["Yes".to_string(), "No".to_string()]);
                values.extend([Some(Value::Bool(true)), Some(Value::Bool(false))]);
            }
            Kind::Choice {
                choices,
                multi: true,
            } => {
                let list: Vec<String> = choices
                    .iter()
                    .enumerate()
                    .map(|(i, (_, t))| format!("{}. {}", i + 1, visible(t)))
                    .collect();
                title.push_str(&format!("  ({})", list.join(", ")));
                typed_at = Some(options.len());
                options.push("Type the numbers, comma-separated (Tab to type)".into());
                values.push(None);
            }
            _ => {
                typed_at = Some(options.len());
                options.push(format!("Type the value: {} (Tab to type)", f.hint()));
                values.push(None);
            }
        }
        if let Some(d) = &f.default {
            options.push(format!("Use the default: {}", visible(&shown(d))));
            values.push(Some(d.clone()));
        }
        let omit_at = (!f.required).then(|| {
            options.push("Leave it out".into());
            values.push(None);
            options.len() - 1
        });
        match tui
            .ask(Vec::new(), Dialog::new(title, options, typed_at))
            .await
        {
            Picked::Dismissed => return Got::Cancel,
            Picked::Option { index, .. } if Some(index) == omit_at => return Got::Omit,
            Picked::Option { index, comment } if Some(index) == typed_at => {
                match f.read(comment.as_deref().unwrap_or("")) {
                    Ok(v) => return Got::Value(v),
                    Err(e) => why = e,
                }
            }
            Picked::Option { index, .. } => {
                if let Some(Some(v)) = values.get(index) {
                    return Got::Value(v.clone());
                }
                return Got::Cancel;
            }
        }
    }
}
