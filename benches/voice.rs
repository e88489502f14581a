//! Voice: from the end of speech to the final text, against a real local
//! speech server (faster-whisper, tiny.en, on this machine's CPU, served
//! by tests/stt/whisper_server.py). The sentence is espeak-ng's, followed
//! by silence; the figure is split in two: the pause the detector waits
//! for (the `silence` setting, fixed) and the time from the end of
//! recording to the text (the upload and the transcription). Median of 5.
//!
//! Run: `TERN_STT_PYTHON=… cargo bench --features voice --bench voice`
//! (ci/voice.sh prints a TERN_STT_PYTHON).

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::Duration;

use tern::harness::voice::{self, Config, Event, Source};

fn main() {
    let Ok(python) = std::env::var("TERN_STT_PYTHON") else {
        eprintln!("voice bench: set TERN_STT_PYTHON (bash ci/voice.sh prints one)");
        std::process::exit(2);
    };
    let dir = std::env::temp_dir().join(format!("tern-voice-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let raw = dir.join("said.wav");
    let spoken = Command::new("espeak-ng")
        .args([
            "-w",
            raw.to_str().unwrap_or(""),
            "Please run the tests and fix the failures.",
        ])
        .status()
        .expect("espeak-ng");
    assert!(spoken.success());
    let mut samples = voice::decode_wav(&std::fs::read(&raw).expect("wav")).expect("wav");
    let speech_ms = samples.len() / 16;
    samples.extend(std::iter::repeat_n(0i16, 32_000));
    let wav = dir.join("spoken.wav");
    std::fs::write(&wav, voice::encode_wav(&samples)).expect("write wav");

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/stt/whisper_server.py");
    let mut server = Command::new(&python)
        .args([script, "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the whisper server");
    let mut line = String::new();
    std::io::BufReader::new(server.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("its first line");
    let addr = line.trim().trim_start_matches("listening on ").to_string();

    let silence = Duration::from_millis(800);
    let mut after_stop = Vec::new();
    let mut text = String::new();
    for _ in 0..5 {
        let l = voice::start(Config {
            endpoint: Some(format!("http://{addr}")),
            model: Some("tiny.en".into()),
            language: Some("en".into()),
            source: Source::File(wav.clone()),
            silence,
            ..Config::default()
        });
        while let Some(ev) = l.next_blocking() {
            match ev {
                Event::Final(t, d) => {
                    text = t;
                    after_stop.push(d);
                }
                Event::Failed(e) => panic!("voice failed: {e}"),
                _ => {}
            }
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    after_stop.sort();
    let median = after_stop[after_stop.len() / 2];
    println!("heard: {text}");
    println!("speech: {speech_ms} ms of audio");
    println!(
        "end of speech → text in the composer: {:.0} ms median = {} ms pause (silence setting) + {:.0} ms from the end of recording (upload + transcription)",
        (silence + median).as_secs_f64() * 1e3,
        silence.as_millis(),
        median.as_secs_f64() * 1e3
    );
    let _ = std::fs::remove_dir_all(&dir);
}
