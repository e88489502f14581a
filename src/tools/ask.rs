//! Tools whose whole point is a person's answer: AskUserQuestion (the
//! model's multiple-choice questions) and ExitPlanMode (a finished plan,
//! and the request to leave plan mode).
//!
//! Both are of [`Kind::Ask`]: policy asks in every mode, and the answer
//! comes back through the approver — line mode's picker, or an SDK's
//! `can_use_tool`, which puts the answers into the input
//! (`updatedInput.answers`) as Claude Code does. The model cannot answer
//! its own questions: `answers` is an approver field, removed from what
//! the model sends.

use std::borrow::Cow;

use super::input::{Fields, Schema};
use super::{Kind, LocalFuture, Tool, ToolContext, ToolOutput};
use crate::json::Value;
use crate::policy::{Mode, Permit};

pub struct AskUserQuestion;

/// The questions of an AskUserQuestion input, checked.
pub(crate) struct Question<'a> {
    pub question: &'a str,
    pub header: &'a str,
    pub options: Vec<(&'a str, &'a str)>,
    pub multi: bool,
}

/// Reads and checks the questions (1–4, each with 2–4 distinct options).
pub(crate) fn questions(input: &Value) -> Result<Vec<Question<'_>>, String> {
    let list = Fields::of(input)?
        .value("questions")
        .and_then(Value::as_array)
        .ok_or("questions must be an array")?;
    if !(1..=4).contains(&list.len()) {
        return Err(format!(
            "ask 1 to 4 questions at a time, not {}",
            list.len()
        ));
    }
    let mut out: Vec<Question<'_>> = Vec::new();
    for q in list {
        let q = Fields::of(q)?;
        let question = q.opt_text("question")?.unwrap_or("").trim();
        if question.is_empty() {
            return Err("every question needs its text".into());
        }
        if out.iter().any(|o| o.question == question) {
            return Err(format!("the question {question:?} is asked twice"));
        }
        let options = q
            .value("options")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .map(|o| {
                let o = Fields::of(o)?;
                Ok((
                    o.opt_text("label")?.unwrap_or("").trim(),
                    o.opt_text("description")?.unwrap_or("").trim(),
                ))
            })
            .collect::<Result<Vec<(&str, &str)>, String>>()?;
        if !(2..=4).contains(&options.len()) {
            return Err(format!(
                "{question:?} needs 2 to 4 options (an \"other\" answer is always offered)"
            ));
        }
        for (i, (label, _)) in options.iter().enumerate() {
            if label.is_empty() || options[..i].iter().any(|(l, _)| l == label) {
                return Err(format!(
                    "the options of {question:?} need distinct, non-empty labels"
                ));
            }
        }
        out.push(Question {
            question,
            header: q.opt_text("header")?.unwrap_or("").trim(),
            options,
            multi: q.flag("multiSelect")?,
        });
    }
    Ok(out)
}

impl Tool for AskUserQuestion {
    fn name(&self) -> &str {
        "AskUserQuestion"
    }
    fn description(&self) -> &str {
        "Ask the user 1 to 4 multiple-choice questions when you need their preference \
         or a decision to go on (which approach, which library, what to name things). \
         Each question has a short header, 2 to 4 options with a label and a one-line \
         description, and multiSelect when several may apply; the user can always give \
         another answer instead. Do not ask what you can find out yourself."
    }
    fn input_schema(&self) -> Cow<'_, Value> {
        static SCHEMA: Schema = Schema::new(
            r#"{"type":"object","additionalProperties":false,"required":["questions"],"properties":{
            "questions":{"type":"array","description":"1 to 4 questions","items":{"type":"object","additionalProperties":false,"required":["question","header","options","multiSelect"],"properties":{
              "question":{"type":"string","description":"The whole question, ending with a question mark"},
              "header":{"type":"string","description":"A label of at most 12 characters"},
              "options":{"type":"array","description":"2 to 4 choices","items":{"type":"object","additionalProperties":false,"required":["label","description"],"properties":{
                "label":{"type":"string","description":"1 to 5 words"},
                "description":{"type":"string","description":"What choosing it means"}}}},
              "multiSelect":{"type":"boolean","description":"Whether several options may be chosen"}}}},
            "answers":{"type":"object","description":"Filled in by whoever answers; leave it out"}}}"#,
        );
        Cow::Borrowed(SCHEMA.get())
    }
    fn kind(&self) -> Kind {
        Kind::Ask
    }
    fn topic(&self) -> super::Topic {
        super::Topic::Answers
    }
    fn is_read_only(&self, _: &Value) -> bool {
        true
    }
    fn is_concurrency_safe(&self, _: &Value, _: &ToolContext) -> bool {
        // One question at a time on a person's screen.
        false
    }
    fn approver_fields(&self) -> &[&str] {
        &["answers"]
    }
    fn validate(&self, input: &Value, _: &ToolContext) -> Result<(), String> {
        questions(input).map(|_| ())
    }
    fn call<'a>(
        &'a self,
        input: Value,
        _: &'a ToolContext,
        _: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            let asked = questions(&input).unwrap_or_default();
            let answers = Fields::of(&input)
                .ok()
                .and_then(|f| f.value("answers"))
                .and_then(Value::as_object);
            let given: Vec<String> = asked
                .iter()
                .filter_map(|q| {
                    let a = answers?.get(q.question)?.as_str()?.trim();
                    (!a.is_empty()).then(|| format!("\"{}\" = \"{a}\"", q.question))
                })
                .collect();
            if given.is_empty() {
                return ToolOutput::error(
                    "Nobody answered the questions. Go on with your best judgment and say what you assumed.",
                );
            }
            ToolOutput::ok(format!(
                "The user answered: {}. Go on with these answers in mind.",
                given.join(", ")
            ))
        })
    }
}

pub struct ExitPlanMode;

impl Tool for ExitPlanMode {
    fn name(&self) -> &str {
        "ExitPlanMode"
    }
    fn description(&self) -> &str {
        "In plan mode, when the plan for a task that changes things is ready: present \
         it (markdown, concise, the steps and the files they touch) and ask the user to \
         approve it and leave plan mode. Not for research-only questions: just answer \
         those."
    }
    fn input_schema(&self) -> Cow<'_, Value> {
        static SCHEMA: Schema = Schema::new(
            r#"{"type":"object","additionalProperties":false,"required":["plan"],"properties":{
            "plan":{"type":"string","description":"The plan, in markdown"}}}"#,
        );
        Cow::Borrowed(SCHEMA.get())
    }
    fn kind(&self) -> Kind {
        Kind::Ask
    }
    fn topic(&self) -> super::Topic {
        super::Topic::Plan
    }
    fn is_read_only(&self, _: &Value) -> bool {
        true
    }
    fn is_concurrency_safe(&self, _: &Value, _: &ToolContext) -> bool {
        false
    }
    fn mode_after(&self) -> Option<Mode> {
        Some(Mode::Default)
    }
    fn validate(&self, input: &Value, _: &ToolContext) -> Result<(), String> {
        if Fields::of(input)?.text("plan")?.trim().is_empty() {
            return Err("the plan is empty".into());
        }
        Ok(())
    }
    fn call<'a>(
        &'a self,
        _: Value,
        _: &'a ToolContext,
        _: &'a Permit,
    ) -> LocalFuture<'a, ToolOutput> {
        Box::pin(async move {
            ToolOutput::ok(
                "The user approved the plan and left plan mode. Carry it out now, updating \
                 the todo list as you go if you keep one.",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;
    use crate::tools::testing::{context, run};

    fn input(options: usize, answers: Option<Value>) -> Value {
        let opts: Vec<Value> = (0..options)
            .map(|i| obj! { "label" => format!("opt{i}"), "description" => "d" })
            .collect();
        let mut v = obj! {
            "questions" => vec![obj! {
                "question" => "Which one?", "header" => "Pick", "options" => opts, "multiSelect" => false,
            }],
        };
        if let (Some(a), Value::Object(m)) = (answers, &mut v) {
            m.insert("answers", a);
        }
        v
    }

    #[test]
    fn answers_reach_the_model_and_bad_questions_are_named() {
        let (ctx, _) = context();
        let out = run(
            &AskUserQuestion,
            &ctx,
            input(2, Some(obj! { "Which one?" => "opt1" })),
        );
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content.contains("\"Which one?\" = \"opt1\""),
            "{}",
            out.content
        );
        let none = run(&AskUserQuestion, &ctx, input(2, None));
        assert!(none.is_error && none.content.contains("Nobody answered"));
        let few = run(&AskUserQuestion, &ctx, input(1, None));
        assert!(
            few.is_error && few.content.contains("2 to 4 options"),
            "{}",
            few.content
        );
        let many = run(&AskUserQuestion, &ctx, input(5, None));
        assert!(many.is_error, "{}", many.content);
        assert_eq!(AskUserQuestion.approver_fields(), ["answers"]);
    }

    #[test]
    fn an_empty_plan_is_refused() {
        let (ctx, _) = context();
        let out = run(&ExitPlanMode, &ctx, obj! { "plan" => "  " });
        assert!(out.is_error && out.content.contains("empty"));
        let out = run(&ExitPlanMode, &ctx, obj! { "plan" => "1. do it" });
        assert!(!out.is_error);
    }
}
