//! WAV in and out: any PCM or float WAV read into 16 kHz mono s16 (the
//! rate and shape every STT backend here is given), and an utterance
//! written back as a WAV for the transcription endpoint.

/// The one format audio is handled in: 16 kHz, mono, signed 16-bit.
pub const RATE: u32 = 16_000;

/// Samples of a WAV file, as 16 kHz mono, or why it cannot be read.
pub fn decode(bytes: &[u8]) -> Result<Vec<i16>, String> {
    if bytes.len() < 12 || &bytes[..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        return Err("not a WAV file (no RIFF/WAVE header)".into());
    }
    let mut at = 12;
    let mut fmt: Option<(u16, u16, u32, u16)> = None;
    while at + 8 <= bytes.len() {
        let id = &bytes[at..at + 4];
        let size = u32::from_le_bytes([bytes[at + 4], bytes[at + 5], bytes[at + 6], bytes[at + 7]])
            as usize;
        let body_start = at + 8;
        // A streamed WAV says 0 or 0xFFFFFFFF for its data size: the rest.
        let body_end = body_start.saturating_add(size).min(bytes.len());
        let body = &bytes[body_start..body_end];
        match id {
            b"fmt " => {
                if body.len() < 16 {
                    return Err("the WAV's fmt chunk is too short".into());
                }
                let le16 = |i: usize| u16::from_le_bytes([body[i], body[i + 1]]);
                let mut tag = le16(0);
                // WAVE_FORMAT_EXTENSIBLE: the real tag opens the sub-format GUID.
                if tag == 0xFFFE && body.len() >= 26 {
                    tag = le16(24);
                }
                let rate = u32::from_le_bytes([body[4], body[5], body[6], body[7]]);
                fmt = Some((tag, le16(2), rate, le16(14)));
            }
            b"data" => {
                let Some((tag, channels, rate, bits)) = fmt else {
                    return Err("the WAV has data before its fmt chunk".into());
                };
                let mono = to_mono(body, tag, channels, bits)?;
                if rate == 0 {
                    return Err("the WAV says its sample rate is 0".into());
                }
                return Ok(resample(&mono, rate));
            }
            _ => {}
        }
        // Chunks are padded to an even length.
        at = body_start.saturating_add(size).saturating_add(size & 1);
    }
    Err("the WAV has no data chunk".into())
}

/// Interleaved samples of any supported encoding, mixed to mono floats.
fn to_mono(data: &[u8], tag: u16, channels: u16, bits: u16) -> Result<Vec<f32>, String> {
    let channels = usize::from(channels);
    if channels == 0 {
        return Err("the WAV says it has 0 channels".into());
    }
    let width = usize::from(bits).div_ceil(8);
    let sample: fn(&[u8]) -> f32 = match (tag, bits) {
        (1, 8) => |b| (f32::from(b[0]) - 128.0) / 128.0,
        (1, 16) => |b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0,
        (1, 24) => |b| (i32::from_le_bytes([0, b[0], b[1], b[2]]) >> 8) as f32 / 8_388_608.0,
        (1, 32) => |b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32 / 2_147_483_648.0,
        (3, 32) => |b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        (3, 64) => |b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32,
        (1 | 3, _) => return Err(format!("unsupported WAV sample size: {bits} bits")),
        _ => {
            return Err(format!(
                "unsupported WAV encoding (format tag {tag}; only PCM and float are read)"
            ));
        }
    };
    let frame = width * channels;
    Ok(data
        .chunks_exact(frame)
        .map(|f| {
            let sum: f32 = f.chunks_exact(width).map(sample).sum();
            sum / channels as f32
        })
        .collect())
}

/// Linear interpolation to 16 kHz. Enough for speech going to an STT
/// model; a polyphase filter would cost code for no audible gain there.
fn resample(input: &[f32], rate: u32) -> Vec<i16> {
    let to_i16 = |x: f32| (x.clamp(-1.0, 1.0) * 32767.0).round() as i16;
    if rate == RATE || input.is_empty() {
        return input.iter().map(|&x| to_i16(x)).collect();
    }
    let out_len = (input.len() as u64 * u64::from(RATE) / u64::from(rate)) as usize;
    let step = f64::from(rate) / f64::from(RATE);
    (0..out_len)
        .map(|i| {
            let pos = i as f64 * step;
            let j = pos as usize;
            let frac = (pos - j as f64) as f32;
            let a = input[j.min(input.len() - 1)];
            let b = input[(j + 1).min(input.len() - 1)];
            to_i16(a + (b - a) * frac)
        })
        .collect()
}

/// 16 kHz mono s16 samples as a WAV file.
pub fn encode(samples: &[i16]) -> Vec<u8> {
    let data_len = (samples.len() * 2) as u32;
    let mut out = Vec::with_capacity(44 + samples.len() * 2);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data_len).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&1u16.to_le_bytes()); // mono
    out.extend_from_slice(&RATE.to_le_bytes());
    out.extend_from_slice(&(RATE * 2).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data_len.to_le_bytes());
    for s in samples {
        out.extend_from_slice(&s.to_le_bytes());
    }
    out
}

/// Samples as the little-endian bytes a `linear16` stream carries.
pub fn bytes_of(samples: &[i16]) -> Vec<u8> {
    samples.iter().flat_map(|s| s.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wav(tag: u16, channels: u16, rate: u32, bits: u16, data: &[u8]) -> Vec<u8> {
        let mut out = b"RIFF\0\0\0\0WAVEfmt ".to_vec();
        out.extend_from_slice(&16u32.to_le_bytes());
        out.extend_from_slice(&tag.to_le_bytes());
        out.extend_from_slice(&channels.to_le_bytes());
        out.extend_from_slice(&rate.to_le_bytes());
        let block = channels * bits / 8;
        out.extend_from_slice(&(rate * u32::from(block)).to_le_bytes());
        out.extend_from_slice(&block.to_le_bytes());
        out.extend_from_slice(&bits.to_le_bytes());
        // An odd-sized chunk before data: skipped with its pad byte.
        out.extend_from_slice(b"LIST\x03\0\0\0abc\0");
        out.extend_from_slice(b"data");
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn round_trip_at_the_native_rate() {
        let samples: Vec<i16> = (0..1000)
            .map(|i| ((i * 37) % 20000 - 10000) as i16)
            .collect();
        assert_eq!(decode(&encode(&samples)).unwrap(), samples);
    }

    #[test]
    fn stereo_48k_is_mixed_and_resampled() {
        // 0.1 s of stereo at 48 kHz: left +0.5, right -0.5 → silence.
        let mut data = Vec::new();
        for _ in 0..4800 {
            data.extend_from_slice(&16384i16.to_le_bytes());
            data.extend_from_slice(&(-16384i16).to_le_bytes());
        }
        let out = decode(&wav(1, 2, 48_000, 16, &data)).unwrap();
        assert_eq!(out.len(), 1600);
        assert!(out.iter().all(|&s| s.abs() <= 1));
    }

    #[test]
    fn float_and_8_bit_and_24_bit_are_read() {
        let f: Vec<u8> = [0.5f32; 160].iter().flat_map(|x| x.to_le_bytes()).collect();
        let out = decode(&wav(3, 1, 16_000, 32, &f)).unwrap();
        assert!(out.iter().all(|&s| (s - 16384).abs() < 2));
        let out = decode(&wav(1, 1, 8_000, 8, &[255u8; 80])).unwrap();
        assert_eq!(out.len(), 160);
        assert!(out[0] > 32000);
        let s24: Vec<u8> = (0..160).flat_map(|_| [0u8, 0, 0xC0]).collect();
        let out = decode(&wav(1, 1, 16_000, 24, &s24)).unwrap();
        assert!(out.iter().all(|&s| (s + 16384).abs() < 2));
    }

    #[test]
    fn what_is_not_a_readable_wav_says_so() {
        assert!(
            decode(b"ID3\x03 not audio")
                .unwrap_err()
                .contains("not a WAV")
        );
        assert!(
            decode(&wav(85, 1, 16_000, 16, &[0; 10]))
                .unwrap_err()
                .contains("encoding")
        );
        assert!(
            decode(&wav(1, 1, 16_000, 12, &[0; 10]))
                .unwrap_err()
                .contains("12 bits")
        );
        let mut truncated = wav(1, 1, 16_000, 16, &[0; 10]);
        truncated.truncate(20);
        assert!(decode(&truncated).is_err());
        assert!(
            decode(&wav(1, 0, 16_000, 16, &[0; 10]))
                .unwrap_err()
                .contains("0 channels")
        );
    }
}
