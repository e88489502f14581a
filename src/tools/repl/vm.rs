//! The VM process: `tern __tern_repl_vm`, one per REPL context. It holds a
//! boa_engine context for the life of the context and speaks JSON lines:
//! the session sends `eval` requests, the VM answers `call` (an inner
//! tool call, answered by `result`) until it sends `done` or `poisoned`.
//!
//! It is sealed twice: the engine is given no module loader, filesystem,
//! process or network API, and the process itself gives up every
//! filesystem and TCP right under landlock before it evaluates anything
//! (on kernels with landlock). Whatever the script does, its only way out
//! is a tool call through the session's permission pipeline.

use std::io::{BufRead, Write};

use boa_engine::{Context, JsResult, JsString, JsValue, NativeFunction, Source};

use crate::json::{self, Value};
use crate::obj;

const PRELUDE: &str = include_str!("prelude.js");

/// The most memory one REPL context may use unless configured (its data
/// segment and anonymous mappings, RLIMIT_DATA): a runaway script ends its
/// own VM, not the machine.
pub(crate) const MEMORY_MIB: u64 = 2048;

/// Runs the VM on stdin/stdout until the session closes stdin. `args`:
/// the memory limit in MiB.
pub(crate) fn serve(args: &[std::ffi::OsString]) -> i32 {
    let mib = args
        .first()
        .and_then(|a| a.to_str()?.parse::<u64>().ok())
        .unwrap_or(MEMORY_MIB);
    let bytes = libc::rlim_t::try_from(mib.saturating_mul(1 << 20)).unwrap_or(libc::rlim_t::MAX);
    let limit = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: bytes,
    };
    // SAFETY: setrlimit reads the struct it is given and nothing else.
    if unsafe { libc::setrlimit(libc::RLIMIT_DATA, &limit) } != 0 {
        let _ = send(&obj! { "op" => "fatal", "error" => "cannot limit the VM's memory" });
        return 1;
    }
    // Best effort: a kernel without landlock still has the engine's seal.
    let _ = crate::sandbox::seal_process();
    let mut ctx = Context::default();
    if let Err(e) = install(&mut ctx) {
        let _ = send(&obj! { "op" => "fatal", "error" => e });
        return 1;
    }
    // Ready: the session's budget starts only now (an emulated or loaded
    // machine may take a while to get here).
    if send(&obj! { "op" => "ready" }).is_err() {
        return 1;
    }
    let stdin = std::io::stdin();
    loop {
        let mut line = String::new();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => return 0,
            Ok(_) => {}
        }
        let Ok(req) = json::parse(&line) else {
            let _ = send(&obj! { "op" => "fatal", "error" => "a request that is not JSON" });
            return 1;
        };
        let answer = eval(&mut ctx, &req);
        if send(&answer).is_err() {
            return 1;
        }
    }
}

fn install(ctx: &mut Context) -> Result<(), String> {
    ctx.register_global_callable(
        JsString::from("__host"),
        2,
        NativeFunction::from_fn_ptr(host),
    )
    .map_err(|e| e.to_string())?;
    ctx.register_global_callable(
        JsString::from("__sample"),
        1,
        NativeFunction::from_fn_ptr(sample),
    )
    .map_err(|e| e.to_string())?;
    ctx.register_global_callable(
        JsString::from("__schema_problem"),
        2,
        NativeFunction::from_fn_ptr(schema_problem),
    )
    .map_err(|e| e.to_string())?;
    ctx.register_global_callable(
        JsString::from("__sleep"),
        1,
        NativeFunction::from_fn_ptr(sleep),
    )
    .map_err(|e| e.to_string())?;
    ctx.eval(Source::from_bytes(PRELUDE))
        .map(|_| ())
        .map_err(|e| format!("the REPL prelude failed: {e}"))
}

fn send(v: &Value) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(v.to_string().as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

fn text(v: &JsValue, ctx: &mut Context) -> JsResult<String> {
    Ok(v.to_string(ctx)?.to_std_string_escaped())
}

/// `__host(name, inputJson)`: one inner call, answered by the session.
fn host(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let name = text(args.first().unwrap_or(&JsValue::undefined()), ctx)?;
    let input = text(args.get(1).unwrap_or(&JsValue::undefined()), ctx)?;
    let input = json::parse(&input).unwrap_or(Value::Null);
    Ok(ask(
        &obj! { "op" => "call", "name" => name, "input" => input },
    ))
}

/// `__sample(inputJson)`: a `haiku()` request, answered by the session.
fn sample(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let input = text(args.first().unwrap_or(&JsValue::undefined()), ctx)?;
    let input = json::parse(&input).unwrap_or(Value::Null);
    Ok(ask(&obj! { "op" => "sample", "input" => input }))
}

/// Sends one request to the session and answers its reply's JSON text.
fn ask(request: &Value) -> JsValue {
    let reply = send(request).ok().and_then(|()| {
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(n) if n > 0 => Some(line),
            _ => None,
        }
    });
    // With the session gone there is nobody to answer: the call fails.
    let reply = reply.unwrap_or_else(|| {
        obj! { "content" => "the session ended", "is_error" => true }.to_string()
    });
    JsValue::from(JsString::from(reply.trim_end()))
}

/// `__schema_problem(name, schemaJson)`: why `registerTool` must refuse
/// (the session's own check, so the script hears it at once), or null.
fn schema_problem(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let name = text(args.first().unwrap_or(&JsValue::undefined()), ctx)?;
    let schema = text(args.get(1).unwrap_or(&JsValue::undefined()), ctx)?;
    let schema = json::parse(&schema).unwrap_or(Value::Null);
    Ok(match super::registered::problem(&name, &schema) {
        Some(why) => JsValue::from(JsString::from(why.as_str())),
        None => JsValue::null(),
    })
}

/// `__sleep(ms)`: a timer's wait (the session counts it in the budget).
fn sleep(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let ms = args
        .first()
        .map(|v| v.to_number(ctx))
        .transpose()?
        .unwrap_or(0.0);
    if ms.is_finite() && ms > 0.0 {
        std::thread::sleep(std::time::Duration::from_millis(ms.min(600_000.0) as u64));
    }
    Ok(JsValue::undefined())
}

fn set(ctx: &mut Context, name: &str, v: impl Into<JsValue>) -> JsResult<()> {
    ctx.global_object()
        .set(JsString::from(name), v.into(), true, ctx)
        .map(|_| ())
}

fn eval(ctx: &mut Context, req: &Value) -> Value {
    let code = req.str_field("code").unwrap_or_default();
    let tools = req
        .get("tools")
        .cloned()
        .unwrap_or(Value::Array(Vec::new()));
    let cwd = req.str_field("cwd").unwrap_or_default();
    let refreshed = set(ctx, "__tools", JsString::from(tools.to_string().as_str()))
        .and_then(|()| set(ctx, "__cwd", JsString::from(cwd)))
        .and_then(|()| ctx.eval(Source::from_bytes("__refresh(__tools, __cwd)")));
    match refreshed {
        Ok(v) if v.is_null() || v.is_undefined() => {}
        Ok(v) => {
            let name = text(&v, ctx).unwrap_or_default();
            return obj! { "op" => "poisoned", "name" => name };
        }
        Err(e) => return obj! { "op" => "poisoned", "name" => e.to_string() },
    }
    let outcome = if req.str_field("op") == Some("invoke") {
        let name = req.str_field("name").unwrap_or_default();
        let input = req.get("input").cloned().unwrap_or(Value::Null).to_string();
        let ready = set(ctx, "__iname", JsString::from(name))
            .and_then(|()| set(ctx, "__iinput", JsString::from(input.as_str())));
        match ready {
            Ok(()) => run(ctx, "__invoke(__iname, __iinput)"),
            Err(e) => thrown(ctx, e),
        }
    } else {
        run(ctx, code)
    };
    // Outside the outcome: promises that never settle leave nothing behind.
    let _ = ctx.run_jobs();
    let mut done = json::parse(&outcome).unwrap_or_else(|_| {
        obj! { "ok" => false, "value" => "the REPL could not read its own outcome" }
    });
    if let Value::Object(m) = &mut done {
        m.insert("op", "done");
    }
    done
}

/// Evaluates one block and waits for its value (jobs, then timers).
fn run(ctx: &mut Context, code: &str) -> String {
    let value = match evaluate(ctx, code) {
        Ok(v) => v,
        Err(e) => return thrown(ctx, e),
    };
    let settled = set(ctx, "__last", value)
        .and_then(|()| ctx.eval(Source::from_bytes("__settle(__last); __last = undefined")))
        .and_then(|_| {
            loop {
                ctx.run_jobs()?;
                let more = ctx.eval(Source::from_bytes("__tick()"))?;
                if !more.to_boolean() {
                    break;
                }
            }
            ctx.run_jobs()?;
            ctx.eval(Source::from_bytes("__outcome()"))
        });
    match settled {
        Ok(v) => text(&v, ctx).unwrap_or_default(),
        Err(e) => thrown(ctx, e),
    }
}

fn thrown(ctx: &mut Context, e: boa_engine::JsError) -> String {
    let shown = e
        .into_opaque(ctx)
        .and_then(|e| set(ctx, "__err", e))
        .and_then(|()| ctx.eval(Source::from_bytes("__thrown(__err)")))
        .and_then(|v| text(&v, ctx));
    shown.unwrap_or_else(|e| {
        obj! { "ok" => false, "value" => e.to_string(), "stdout" => "", "stderr" => "" }.to_string()
    })
}

/// As a script (its last expression is the value; top-level declarations
/// stay for later calls); with top-level `await`, as the body of an async
/// function whose plain `NAME =` declarations become globals.
fn evaluate(ctx: &mut Context, code: &str) -> JsResult<JsValue> {
    let script = super::source::persistent(code);
    match ctx.eval(Source::from_bytes(&script)) {
        Err(e) if super::source::has_await(code) && e.to_string().contains("SyntaxError") => {
            // The last expression returned, as a script would give it;
            // when that does not parse, the block as it was.
            let plain = super::source::async_body(code);
            match super::source::returning_last(code) {
                Some(returning) => {
                    match ctx.eval(Source::from_bytes(&super::source::async_body(&returning))) {
                        Err(e) if e.to_string().contains("SyntaxError") => {
                            ctx.eval(Source::from_bytes(&plain))
                        }
                        other => other,
                    }
                }
                None => ctx.eval(Source::from_bytes(&plain)),
            }
        }
        other => other,
    }
}
