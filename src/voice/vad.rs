//! End of speech by energy: 20 ms frames, a frame is voiced when its RMS
//! level is over a threshold (the configured floor, raised to stay well
//! above the noise heard so far), speech has begun after a few voiced
//! frames in a row, and it has ended after enough quiet frames after that.
//! Crude next to a trained VAD, but it needs no model, costs a few hundred
//! bytes, and trailing silence is all it has to find.

use std::time::Duration;

/// 20 ms at 16 kHz.
const FRAME: usize = 320;
/// Voiced frames in a row that count as speech (60 ms: a click is not).
const ONSET: u32 = 3;
/// How far over the noise floor a voiced frame must be, in dB.
const OVER_NOISE_DB: f32 = 12.0;

pub struct Detector {
    floor_db: f32,
    /// Slow estimate of the background level, in dB.
    noise_db: Option<f32>,
    pending: Vec<i16>,
    run: u32,
    quiet: u32,
    quiet_to_end: u32,
    heard: bool,
    ended: bool,
}

fn level_db(frame: &[i16]) -> f32 {
    let sum: f64 = frame.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
    let rms = (sum / frame.len().max(1) as f64).sqrt() / 32768.0;
    if rms <= 1e-7 {
        -140.0
    } else {
        20.0 * rms.log10() as f32
    }
}

impl Detector {
    /// `floor_db`: the least level (dBFS, RMS) that counts as voice;
    /// `silence`: how long a pause after speech ends it.
    pub fn new(floor_db: f32, silence: Duration) -> Detector {
        let frames = (silence.as_millis() / 20).max(1);
        Detector {
            floor_db,
            noise_db: None,
            pending: Vec::new(),
            run: 0,
            quiet: 0,
            quiet_to_end: u32::try_from(frames).unwrap_or(u32::MAX),
            heard: false,
            ended: false,
        }
    }

    /// Whether speech was heard at all.
    pub fn heard(&self) -> bool {
        self.heard
    }

    /// Feeds samples; true once speech has been followed by the pause.
    pub fn feed(&mut self, samples: &[i16]) -> bool {
        self.pending.extend_from_slice(samples);
        let whole = self.pending.len() / FRAME * FRAME;
        let frames: Vec<i16> = self.pending.drain(..whole).collect();
        for frame in frames.chunks_exact(FRAME) {
            self.frame(level_db(frame));
        }
        self.ended
    }

    fn frame(&mut self, db: f32) {
        let threshold = match self.noise_db {
            Some(n) => self.floor_db.max(n + OVER_NOISE_DB),
            None => self.floor_db,
        };
        let voiced = db > threshold;
        // The background: follows the level down at once and up slowly,
        // so steady noise becomes the floor and speech barely moves it.
        let clamped = db.max(-90.0);
        self.noise_db = Some(match self.noise_db {
            Some(n) if clamped < n => clamped,
            Some(n) => n + (clamped - n) * 0.01,
            None => clamped,
        });
        if voiced {
            self.run += 1;
            self.quiet = 0;
            if self.run >= ONSET {
                self.heard = true;
            }
        } else {
            self.run = 0;
            if self.heard {
                self.quiet += 1;
                if self.quiet >= self.quiet_to_end {
                    self.ended = true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(ms: usize, amplitude: f32) -> Vec<i16> {
        (0..ms * 16)
            .map(|i| ((i as f32 * 0.1).sin() * amplitude * 32767.0) as i16)
            .collect()
    }

    fn noise(ms: usize, amplitude: f32) -> Vec<i16> {
        let mut x: u32 = 12345;
        (0..ms * 16)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (((x >> 16) as f32 / 32768.0 - 1.0) * amplitude * 32767.0) as i16
            })
            .collect()
    }

    #[test]
    fn speech_then_the_pause_ends_it() {
        let mut d = Detector::new(-40.0, Duration::from_millis(600));
        assert!(!d.feed(&noise(500, 0.001)));
        assert!(!d.heard());
        assert!(!d.feed(&tone(800, 0.3)));
        assert!(d.heard());
        // A short pause inside speech does not end it.
        assert!(!d.feed(&noise(300, 0.001)));
        assert!(!d.feed(&tone(200, 0.3)));
        assert!(!d.feed(&noise(400, 0.001)));
        assert!(d.feed(&noise(300, 0.001)));
    }

    #[test]
    fn noise_and_clicks_are_not_speech() {
        let mut d = Detector::new(-40.0, Duration::from_millis(600));
        for _ in 0..20 {
            d.feed(&noise(200, 0.001));
            // 20 ms click: under the onset.
            d.feed(&tone(20, 0.5));
        }
        assert!(!d.heard());
        // Loud steady noise raises the threshold with it.
        let mut d = Detector::new(-40.0, Duration::from_millis(600));
        d.feed(&noise(300, 0.02));
        let loud_noise_db = level_db(&noise(20, 0.02));
        assert!(loud_noise_db > -40.0, "{loud_noise_db}");
        d.feed(&noise(3000, 0.02));
        assert!(!d.heard());
    }
}
