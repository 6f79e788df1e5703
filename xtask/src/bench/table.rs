//! What every part of the bench shares, and nothing else: a measured [`Row`], the [`median`] of
//! samples, numbers as the tables print them ([`sig3`], [`thousands`]), and [`replace_between`],
//! which rewrites a marked section of BENCHMARKS.md. A leaf: it imports no other bench module.

use serde::Deserialize;

/// One row of the table, in the form `acp-bench rows` prints it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Row {
    pub name: String,
    pub unit: String,
    /// `None` when the measurement gave no number (serde_json writes NaN as `null`).
    pub ours: Option<f64>,
    pub reference: Option<f64>,
    /// Reference time / our time: above 1 means we are faster (or, for memory, smaller).
    pub ratio: Option<f64>,
    #[serde(default)]
    pub note: String,
}

/// The median; the mean of the middle two for an even count.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// A number to three significant digits, thousands grouped: `0.0123`, `4.56`, `789`, `12,300`.
pub fn sig3(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let magnitude = |x: f64| x.abs().log10().floor() as i32;
    let step = 10f64.powi(magnitude(x) - 2);
    // Rounding can carry into the next power of ten (9.996 → 10.0), so measure again after it.
    let rounded = (x / step).round() * step;
    let decimals = (2 - magnitude(rounded)).max(0) as usize;
    let text = format!("{rounded:.decimals$}");
    if decimals > 0 {
        return text;
    }
    let (sign, digits) = text.strip_prefix('-').map_or(("", text.as_str()), |d| ("-", d));
    format!("{sign}{}", group_digits(digits))
}

/// `n` with its thousands grouped: `1,000`, `12,345`.
pub fn thousands(n: u64) -> String {
    group_digits(&n.to_string())
}

/// A string of digits with a comma before each group of three from the right.
fn group_digits(digits: &str) -> String {
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    grouped
}

/// `text` with `section` between the `begin` and `end` markers, the text around them kept byte
/// for byte; without markers, they are appended with the section.
pub fn replace_between(text: &str, begin_marker: &str, end_marker: &str, section: &str) -> Result<String, String> {
    let section = section.trim_end_matches('\n');
    let block = format!("{begin_marker}\n{section}\n{end_marker}");
    match (text.find(begin_marker), text.find(end_marker)) {
        (Some(begin), Some(end)) if begin < end => {
            if text[end + end_marker.len()..].contains(begin_marker)
                || text[begin + begin_marker.len()..].contains(begin_marker)
            {
                return Err(format!("{begin_marker} appears more than once; keep one pair of markers"));
            }
            Ok(format!("{}{block}{}", &text[..begin], &text[end + end_marker.len()..]))
        }
        (None, None) => {
            let separator = if text.is_empty() || text.ends_with("\n\n") {
                ""
            } else if text.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            };
            Ok(format!("{text}{separator}{block}\n"))
        }
        _ => Err(format!(
            "expected one {begin_marker} line and, after it, one {end_marker} line; fix the markers by hand"
        )),
    }
}
