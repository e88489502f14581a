//! The pipeline's promises about a whole call, counted: one Bash
//! analysis per decision, shared by the question's suggested rule, and
//! the sandbox the decision assumed is the one the line runs in.

use std::cell::RefCell;
use std::rc::Rc;

use super::{Approval, Approver, Asking, Pipeline};
use crate::agent::hooks::Hooks;
use crate::model::stream::ToolUse;
use crate::obj;
use crate::policy::bash::ANALYSES;
use crate::policy::{Mode, Policy, PolicySpec};
use crate::tools::testing::context;
use crate::tools::{LocalFuture, Registry};

/// Says yes once to everything, keeping the rule each question offered.
#[derive(Default)]
struct Yes(RefCell<Vec<Option<String>>>);

impl Approver for Yes {
    fn approve<'a>(&'a self, asking: Asking<'a>) -> LocalFuture<'a, Approval> {
        self.0
            .borrow_mut()
            .push(asking.suggestion.map(str::to_string));
        Box::pin(async { Approval::Once })
    }
}

fn pipeline(
    spec: impl FnOnce(PolicySpec) -> PolicySpec,
) -> (Pipeline, Rc<Yes>, std::path::PathBuf) {
    let (ctx, dir) = context();
    let policy = Policy::from_spec(spec(PolicySpec::new(Mode::Default, Vec::new(), &dir, &[])));
    let yes = Rc::new(Yes::default());
    let approver: Rc<dyn Approver> = yes.clone();
    let p = Pipeline::new(
        Registry::builtin(),
        policy,
        ctx,
        Some(approver),
        Rc::new(Hooks::none()),
    );
    (p, yes, dir)
}

fn bash(command: &str) -> ToolUse {
    ToolUse {
        id: "toolu_1".into(),
        name: "Bash".into(),
        input: Ok(obj! { "command" => command }),
    }
}

#[test]
fn a_bash_line_that_asks_is_analysed_once_for_its_decision_and_its_question() {
    let (pipeline, yes, dir) = pipeline(|s| s);
    ANALYSES.with(|n| n.set(0));
    let out = smol::block_on(pipeline.run(bash("touch made-here")));
    assert!(!out.is_error, "{}", out.content);
    assert!(dir.join("made-here").exists());
    // It asked, and the question offered a rule worked out from the line.
    assert_eq!(*yes.0.borrow(), [Some("Bash(touch:*)".to_string())]);
    assert_eq!(ANALYSES.with(|n| n.get()), 1, "analyses for one call");
    // Whether it may run beside others is asked when its block closes,
    // before anything earlier in the turn ran: an analysis of its own.
    ANALYSES.with(|n| n.set(0));
    assert!(!pipeline.is_concurrency_safe(&bash("touch other")));
    assert!(pipeline.is_concurrency_safe(&bash("cat made-here")));
    assert_eq!(ANALYSES.with(|n| n.get()), 2);
}

/// Regression: whether a line only reads was judged in tern's own
/// directory, not where the shell is. `./tools/cat` there is a script
/// (which may write: it must not run beside other calls); where tern
/// started there is no such file, and a `cat` by any path only reads.
#[test]
fn concurrency_is_judged_where_the_shell_is_not_where_tern_started() {
    use std::os::unix::fs::PermissionsExt;
    let (pipeline, _, dir) = pipeline(|s| s);
    let here = dir.join("checkout");
    std::fs::create_dir_all(here.join("tools")).unwrap();
    std::fs::write(here.join("tools/cat"), "#!/bin/sh\ntouch written\n").unwrap();
    std::fs::set_permissions(
        here.join("tools/cat"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    assert!(
        !std::path::Path::new("tools/cat").exists(),
        "tern's own directory has one"
    );
    pipeline.ctx().shell_cwd.set(&here);
    assert!(!pipeline.is_concurrency_safe(&bash("./tools/cat notes.txt")));
    assert!(pipeline.is_concurrency_safe(&bash("cat notes.txt")));
}
