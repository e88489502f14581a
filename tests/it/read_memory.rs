//! Read of a huge single-line file with a small `limit` streams it: the
//! peak memory of the tern process stays far below the file's size. Its
//! own test binary, and the peak is read from wait4(2) for exactly this
//! child, so no other process's memory counts.

use crate::support;

use std::io::Write;
use std::process::Stdio;

use support::standin::{self, StandIn};
use support::*;
use tern::obj;

const FILE_MB: usize = 320;

/// Runs the child to the end; its exit status and peak resident set (KiB).
fn wait_with_peak(child: std::process::Child) -> (i32, libc::c_long) {
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(got, pid, "wait4");
    (status, usage.ru_maxrss)
}

#[test]
fn a_small_limit_on_a_huge_single_line_file_stays_small() {
    let dir = std::fs::canonicalize(scratch("huge-line")).unwrap();
    let path = dir.join("one-line.txt");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..FILE_MB {
            f.write_all(&chunk).unwrap();
        }
        f.write_all(b"\nsecond line\n").unwrap();
    }
    let input = obj! { "file_path" => "one-line.txt", "limit" => 1i64 }.to_json();
    let api = StandIn::start(vec![
        standin::tools_reply(&[("toolu_r", "Read", &input)]),
        standin::text_reply("done"),
    ]);
    let child = tern(&api.url, &dir)
        .args(["-p", "read it", "--output-format", "json"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (status, peak_kib) = wait_with_peak(child);
    let _ = std::fs::remove_file(&path);
    assert_eq!(status, 0);
    let result = &tool_results(&api.requests()[1])[0];
    let text = result.str_field("content").unwrap();
    assert!(text.contains("[line truncated]"), "{text}");
    assert!(text.contains("showing lines 1-1 of 2"), "{text}");
    assert!(!text.contains("second line"));
    let peak_mb = peak_kib / 1024;
    println!("peak RSS reading a {FILE_MB} MB line with limit 1: {peak_mb} MB");
    // Holding the line would need at least FILE_MB.
    assert!(
        peak_mb < 96,
        "tern peaked at {peak_mb} MB for a {FILE_MB} MB line"
    );
}
