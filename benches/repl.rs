//! The REPL VM's own costs, measured on the real VM process (`tern
//! __tern_repl_vm`, the binary this build made): starting a fresh context
//! (spawn, engine and prelude, until it says it is ready, plus its first
//! block), one block on a live context, and one inner call's round trip
//! (answered here at once, so what is left is the VM's and the pipe's
//! part), and a replay (a fresh VM and 20 blocks whose calls are answered
//! at once, as the log answers them). Goals (issue 19): a live call ≤ 5 ms
//! of overhead, a fresh context ≤ 50 ms, a replay of 20 blocks ≤ 200 ms.
//! Medians and p90 of repeated runs.
//!
//! Run: `cargo bench --features repl --bench repl`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use tern::json::{self, Value};
use tern::obj;

struct Vm {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Vm {
    fn start() -> Vm {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tern"))
            .arg("__tern_repl_vm")
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the VM starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut vm = Vm {
            child,
            stdin,
            stdout,
        };
        assert_eq!(vm.next().str_field("op"), Some("ready"));
        vm
    }

    fn next(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        json::parse(&line).unwrap()
    }

    fn send(&mut self, v: &Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// One block; inner calls are answered with `answer` at once.
    fn eval(&mut self, code: &str, answer: &str) -> Value {
        self.send(&obj! { "op" => "eval", "code" => code, "tools" => Value::Array(vec![Value::from("Read")]), "cwd" => "/" });
        loop {
            let m = self.next();
            match m.str_field("op") {
                Some("call") => self.send(&obj! { "content" => answer, "is_error" => false }),
                _ => return m,
            }
        }
    }
}

impl Drop for Vm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn report(name: &str, mut v: Vec<Duration>) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{name:<34} n={:<4} median {:>7.2} ms  p90 {:>7.2} ms  max {:>7.2} ms",
        v.len(),
        ms(v[v.len() / 2]),
        ms(v[(v.len() * 9 / 10).min(v.len() - 1)]),
        ms(*v.last().unwrap())
    );
}

fn main() {
    let fresh: Vec<Duration> = (0..20)
        .map(|_| {
            let t = Instant::now();
            let mut vm = Vm::start();
            let done = vm.eval("1 + 1", "");
            assert_eq!(done.str_field("value"), Some("2"));
            t.elapsed()
        })
        .collect();
    report("fresh context (ready + 1st block)", fresh);

    let mut vm = Vm::start();
    vm.eval("let n = 0; const files = []", "");
    let live: Vec<Duration> = (0..200)
        .map(|_| {
            let t = Instant::now();
            let done = vm.eval("n += 1; files.push('f' + n); n", "");
            assert_eq!(done.str_field("op"), Some("done"));
            t.elapsed()
        })
        .collect();
    report("live block, no inner call", live);

    let text = "x".repeat(4096);
    let inner: Vec<Duration> = (0..200)
        .map(|_| {
            let t = Instant::now();
            let done = vm.eval("Read({file_path: 'a'}).length", &text);
            assert_eq!(done.str_field("value"), Some("4096"));
            t.elapsed()
        })
        .collect();
    report("live block, one 4 KB inner call", inner);
    drop(vm);

    // What a resume does: a fresh VM, then 20 logged blocks whose calls
    // are answered from the log at once.
    let replays: Vec<Duration> = (0..10)
        .map(|_| {
            let t = Instant::now();
            let mut vm = Vm::start();
            for k in 0..20 {
                let done = vm.eval(
                    &format!("let v{k} = Read({{file_path: 'f{k}'}}).length + {k}; v{k}"),
                    "logged result",
                );
                assert_eq!(done.str_field("op"), Some("done"));
            }
            t.elapsed()
        })
        .collect();
    report("replay: fresh VM + 20 blocks", replays);
}
