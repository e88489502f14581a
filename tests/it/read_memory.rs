//! Read of a huge single-line file with a small `limit` streams it: the
//! peak memory of the tern process stays far below the file's size. The
//! peak is the high-water mark /proc shows for tern's own image.

use crate::support;

use std::io::Write;
use std::process::Stdio;

use support::standin::{self, StandIn};
use support::*;
use tern::obj;

const FILE_MB: usize = 320;

/// Runs the child to the end: its exit code and the high-water mark of
/// its resident set (KiB), read from `/proc/<pid>/status` until it ends.
/// Not wait4's `ru_maxrss`: that also counts the pages the child shared
/// with this test process between fork and exec, and late in a full run
/// the test binary is itself past 100 MB (the test failed on that, at
/// 130 MB for a tern that peaked at 16). `spawn` returns after the exec,
/// so every read here is of tern's own image; the mark never goes down,
/// so a read after the file is streamed sees the peak of the stream.
fn wait_with_peak(mut child: std::process::Child) -> (i32, u64) {
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        let hwm = std::fs::read_to_string(&status_file).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        });
        if let Some(kib) = hwm {
            peak = peak.max(kib);
        }
        match child.try_wait().unwrap() {
            Some(status) => return (status.code().unwrap_or(-1), peak),
            None => std::thread::sleep(std::time::Duration::from_millis(2)),
        }
    }
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
    // Read at least once while it ran (a tern at rest is several MB).
    assert!(peak_kib > 1024, "no high-water mark read: {peak_kib} KiB");
    let peak_mb = peak_kib / 1024;
    println!("peak RSS reading a {FILE_MB} MB line with limit 1: {peak_mb} MB");
    // Holding the line would need at least FILE_MB.
    assert!(
        peak_mb < 96,
        "tern peaked at {peak_mb} MB for a {FILE_MB} MB line"
    );
}
