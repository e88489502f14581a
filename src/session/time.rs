//! UTC timestamps without a time-zone database: transcripts and the system
//! prompt only need UTC.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, as `2026-11-30T12:34:56.789Z`.
pub fn timestamp() -> String {
    iso(SystemTime::now())
}

/// `2026-11-30 12:34 UTC`, for listings.
pub fn format_system_time(t: SystemTime) -> String {
    let s = iso(t);
    format!("{} {} UTC", &s[..10], &s[11..16])
}

fn iso(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// Today as `YYYY-MM-DD`.
pub fn today() -> String {
    timestamp()[..10].to_string()
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
/// published algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_422), (2025, 11, 30));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn timestamp_shape() {
        let t = timestamp();
        assert_eq!(t.len(), 24, "{t}");
        assert!(t.ends_with('Z') && &t[10..11] == "T");
        assert_eq!(today(), t[..10]);
    }
}
