//! Where the audio comes from: a recorder program writing raw 16 kHz mono
//! s16le to its stdout (arecord, pw-record, parecord or SoX's rec, or the
//! command the settings name), or a WAV file played at the pace of a
//! microphone (`TERN_VOICE_SOURCE=file:PATH`), for scripts and tests.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use super::{Error, wav};

/// 100 ms of audio: what one read of the recorder hands on.
const CHUNK_SAMPLES: usize = 1600;

#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// This argv; unset, the first recorder found on PATH.
    Command(Option<Vec<String>>),
    File(PathBuf),
}

pub enum Captured {
    Audio(Vec<i16>),
    /// The source ended: the file is played, or the recorder stopped
    /// (with why, when it failed before giving any audio).
    Ended(Option<Error>),
}

/// The recorders tried in turn, each asked for 16 kHz, mono, s16le raw
/// PCM on stdout.
const KNOWN: &[&[&str]] = &[
    &[
        "arecord", "-q", "-t", "raw", "-f", "S16_LE", "-r", "16000", "-c", "1", "-",
    ],
    &[
        "pw-record",
        "--rate",
        "16000",
        "--channels",
        "1",
        "--format",
        "s16",
        "-",
    ],
    &[
        "parecord",
        "--raw",
        "--rate=16000",
        "--channels=1",
        "--format=s16le",
    ],
    &[
        "rec", "-q", "-t", "raw", "-r", "16000", "-c", "1", "-e", "signed", "-b", "16", "-",
    ],
];

fn on_path(name: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    std::env::split_paths(path?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The recorder's argv, with its program resolved on `path`.
pub fn recorder(
    configured: Option<&[String]>,
    path: Option<&std::ffi::OsStr>,
) -> Result<(PathBuf, Vec<String>), Error> {
    if let Some(argv) = configured {
        let Some(program) = argv.first() else {
            return Err(Error::NoRecorder("voice.recorder is an empty list".into()));
        };
        return match on_path(program, path) {
            Some(p) => Ok((p, argv[1..].to_vec())),
            None => Err(Error::NoRecorder(format!(
                "the recorder '{program}' (voice.recorder) is not on PATH"
            ))),
        };
    }
    for argv in KNOWN {
        if let Some(p) = on_path(argv[0], path) {
            return Ok((p, argv[1..].iter().map(|s| s.to_string()).collect()));
        }
    }
    Err(Error::NoRecorder(
        "no recorder found: install arecord (alsa-utils), pw-record (pipewire), parecord (pulseaudio-utils) or rec (sox), or set voice.recorder".into(),
    ))
}

/// A running source; dropping it stops the recorder.
pub struct Capture {
    child: Option<Child>,
    stop: Arc<AtomicBool>,
    /// What the source is, for the "listening" line.
    pub name: String,
}

impl Capture {
    /// Stops the source (the recorder is ended; a file stops playing).
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(mut child) = self.child.take() {
            // SIGTERM first: arecord and rec flush and leave quietly.
            if let Ok(pid) = i32::try_from(child.id()) {
                // SAFETY: kill(2) on the child's own pid.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
            let deadline = Instant::now() + Duration::from_millis(500);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts the source; its audio and its end arrive on `tx`.
pub fn start(
    source: &Source,
    path: Option<&std::ffi::OsStr>,
    tx: Sender<Captured>,
) -> Result<Capture, Error> {
    let stop = Arc::new(AtomicBool::new(false));
    match source {
        Source::File(file) => {
            let samples = read_file(file)?;
            let stopping = Arc::clone(&stop);
            std::thread::spawn(move || play(samples, &stopping, &tx));
            Ok(Capture {
                child: None,
                stop,
                name: format!("file {}", file.display()),
            })
        }
        Source::Command(configured) => {
            let (program, args) = recorder(configured.as_deref(), path)?;
            let mut child = Command::new(&program)
                .args(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::PermissionDenied => Error::Permission(format!(
                        "cannot run the recorder {}: {e}",
                        program.display()
                    )),
                    _ => Error::NoRecorder(format!(
                        "cannot start the recorder {}: {e}",
                        program.display()
                    )),
                })?;
            let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
                let _ = child.kill();
                return Err(Error::NoRecorder(
                    "the recorder's output could not be read".into(),
                ));
            };
            let name = program.file_name().map_or_else(
                || program.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            let label = name.clone();
            std::thread::spawn(move || pump(stdout, stderr, &label, &tx));
            Ok(Capture {
                child: Some(child),
                stop,
                name,
            })
        }
    }
}

fn read_file(file: &Path) -> Result<Vec<i16>, Error> {
    // Not a FIFO or a device: a WAV is a regular file of bounded size.
    let meta = std::fs::metadata(file)
        .map_err(|e| Error::NoDevice(format!("cannot read {}: {e}", file.display())))?;
    if !meta.is_file() {
        return Err(Error::Format(format!(
            "{} is not a regular file",
            file.display()
        )));
    }
    if meta.len() > 256 * 1024 * 1024 {
        return Err(Error::Format(format!("{} is over 256 MiB", file.display())));
    }
    let bytes = std::fs::read(file)
        .map_err(|e| Error::NoDevice(format!("cannot read {}: {e}", file.display())))?;
    wav::decode(&bytes).map_err(|e| Error::Format(format!("{}: {e}", file.display())))
}

/// Hands the file on 100 ms at a time, at the pace it would be spoken.
fn play(samples: Vec<i16>, stop: &AtomicBool, tx: &Sender<Captured>) {
    let began = Instant::now();
    for (i, chunk) in samples.chunks(CHUNK_SAMPLES).enumerate() {
        let due = began + Duration::from_millis(100 * i as u64);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        if stop.load(Ordering::Relaxed) || tx.send(Captured::Audio(chunk.to_vec())).is_err() {
            return;
        }
    }
    let _ = tx.send(Captured::Ended(None));
}

fn pump(
    mut stdout: std::process::ChildStdout,
    stderr: std::process::ChildStderr,
    name: &str,
    tx: &Sender<Captured>,
) {
    // The recorder's complaints, for the message if it fails (bounded).
    let said = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.take(8192).read_to_string(&mut text);
        text
    });
    let mut buf = vec![0u8; CHUNK_SAMPLES * 2];
    let mut odd: Option<u8> = None;
    let mut got_any = false;
    loop {
        match stdout.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                got_any = true;
                let mut bytes: Vec<u8> = odd.take().into_iter().collect();
                bytes.extend_from_slice(&buf[..n]);
                if bytes.len() % 2 == 1 {
                    odd = bytes.pop();
                }
                let samples = bytes
                    .chunks_exact(2)
                    .map(|b| i16::from_le_bytes([b[0], b[1]]))
                    .collect();
                if tx.send(Captured::Audio(samples)).is_err() {
                    return;
                }
            }
        }
    }
    let stderr = said.join().unwrap_or_default();
    let why = (!got_any).then(|| classify(name, &stderr));
    let _ = tx.send(Captured::Ended(why));
}

/// A recorder that gave no audio: no device, no permission, or another
/// failure, told apart by what it said.
fn classify(name: &str, stderr: &str) -> Error {
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("it exited without a word")
        .trim();
    let last: String = last.chars().take(300).collect();
    let lower = stderr.to_ascii_lowercase();
    if lower.contains("permission denied") || lower.contains("access denied") {
        Error::Permission(format!(
            "{name} may not open the microphone ({last}); check the audio group or the sound server's permissions"
        ))
    } else if [
        "no such file",
        "no such device",
        "audio open error",
        "unknown pcm",
        "no soundcards",
        "connection refused",
        "connection failure",
        "host is down",
        "can't open",
        "cannot open",
        "no default",
    ]
    .iter()
    .any(|m| lower.contains(m))
    {
        Error::NoDevice(format!("{name} found no microphone ({last})"))
    } else {
        Error::NoDevice(format!("{name} gave no audio ({last})"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorders_are_told_apart_by_what_they_say() {
        let e = classify(
            "arecord",
            "ALSA lib pcm.c: Unknown PCM default\narecord: main:831: audio open error: No such file or directory\n",
        );
        assert!(
            matches!(e, Error::NoDevice(ref m) if m.contains("no microphone") && m.contains("audio open error")),
            "{e:?}"
        );
        let e = classify(
            "arecord",
            "arecord: main:831: audio open error: Permission denied\n",
        );
        assert!(matches!(e, Error::Permission(_)), "{e:?}");
        let e = classify("parecord", "Connection failure: Connection refused\n");
        assert!(matches!(e, Error::NoDevice(_)), "{e:?}");
    }

    #[test]
    fn the_recorder_is_found_on_path_or_named() {
        let dir = std::env::temp_dir().join(format!("tern-rec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = std::ffi::OsString::from(&dir);
        assert!(matches!(
            recorder(None, Some(&path)),
            Err(Error::NoRecorder(_))
        ));
        std::fs::write(dir.join("rec"), "").unwrap();
        let (p, args) = recorder(None, Some(&path)).unwrap();
        assert_eq!(p, dir.join("rec"));
        assert!(args.windows(2).any(|w| w == ["-r", "16000"]));
        let named = vec!["my-rec".to_string(), "--x".to_string()];
        assert!(
            matches!(recorder(Some(&named), Some(&path)), Err(Error::NoRecorder(m)) if m.contains("my-rec"))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
