//! Finding the bytes a JSON string escapes (`"`, `\`, and those below 0x20), shared by the
//! writer (which copies the runs between them) and the reader (which finds a string's end).

/// True when some byte of `word` is `"`, `\` or below 0x20 (what JSON strings escape).
#[inline(always)]
fn needs_escape(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    (below_space | has_zero(word ^ (ONES * b'"' as u64)) | has_zero(word ^ (ONES * b'\\' as u64))) != 0
}

/// The index of the first byte of `bytes` that JSON escapes, or its length: sixteen bytes at a
/// time with SSE2 (every x86-64 has it), the last sixteen overlapping the ones before; strings
/// shorter than that (most keys and ids) in one or two overlapping words.
#[inline(always)]
pub(crate) fn clean_prefix(bytes: &[u8]) -> usize {
    let len = bytes.len();
    #[cfg(target_arch = "x86_64")]
    if len >= 16 {
        let mut i = 0;
        loop {
            let mask = sse2_mask(&bytes[i..i + 16]);
            if mask != 0 {
                return i + mask.trailing_zeros() as usize;
            }
            if i + 16 == len {
                return len;
            }
            i = (i + 16).min(len - 16);
        }
    }
    if !short_needs_escape(bytes) {
        return len;
    }
    first_to_escape(bytes)
}

/// One bit per byte of `chunk` (16 bytes) that JSON escapes.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn sse2_mask(chunk: &[u8]) -> i32 {
    assert!(chunk.len() >= 16);
    // SAFETY: SSE2 is part of x86-64, and the unaligned load reads chunk[..16], in bounds.
    unsafe {
        use std::arch::x86_64::*;
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        let control = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1F)), _mm_set1_epi8(0x1F));
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        _mm_movemask_epi8(_mm_or_si128(control, _mm_or_si128(quote, backslash)))
    }
}

/// Whether some byte of `bytes` is one JSON escapes, for strings of any length (eight bytes at a
/// time, the last word overlapping) but meant for short ones: without SSE2 it is the only scan.
#[inline(always)]
fn short_needs_escape(bytes: &[u8]) -> bool {
    let len = bytes.len();
    let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or([0; 8]));
    let u32_at = |i: usize| u64::from(u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap_or([0; 4])));
    match len {
        0 => false,
        // Three bytes cover a string of one to three (a space, which needs nothing, pads the word).
        1..=3 => {
            needs_escape(u64::from_le_bytes([bytes[0], bytes[len / 2], bytes[len - 1], b' ', b' ', b' ', b' ', b' ']))
        }
        4..=7 => needs_escape(u32_at(0) | u32_at(len - 4) << 32),
        _ => {
            let mut i = 0;
            while i + 8 < len {
                if needs_escape(u64_at(i)) {
                    return true;
                }
                i += 8;
            }
            needs_escape(u64_at(len - 8))
        }
    }
}

/// The index of the first byte of `bytes` that JSON escapes, or its length.
#[inline]
fn first_to_escape(bytes: &[u8]) -> usize {
    bytes.iter().position(|&b| b < 0x20 || b == b'"' || b == b'\\').unwrap_or(bytes.len())
}
