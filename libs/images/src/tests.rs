#![allow(clippy::unwrap_used, reason = "test code")]

use image::{ImageFormat, Rgb, RgbImage};

use super::*;

/// A photo-like PNG: noise compresses badly, as a real photo does.
fn noisy_png(width: u32, height: u32) -> Vec<u8> {
    let mut seed = 0x2545_f491_u32;
    let picture = RgbImage::from_fn(width, height, |x, y| {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        let n = (seed & 0x3f) as u8;
        Rgb([(x % 256) as u8 ^ n, (y % 256) as u8 ^ n, n.wrapping_mul(3)])
    });
    let mut out = Vec::new();
    picture.write_to(&mut Cursor::new(&mut out), ImageFormat::Png).unwrap();
    out
}

fn dimensions(bytes: &[u8]) -> (u32, u32) {
    ImageReader::new(Cursor::new(bytes)).with_guessed_format().unwrap().into_dimensions().unwrap()
}

#[test]
fn a_large_photo_becomes_a_jpeg_within_the_budget_and_the_longest_side() {
    let photo = noisy_png(3000, 2000);
    assert!(photo.len() > 4 * EMBED_TARGET_BYTES, "the fixture is large: {}", photo.len());
    let fitted = fit(&photo, EMBED_TARGET_BYTES).unwrap();
    assert!(fitted.changed);
    assert_eq!(fitted.mime, "image/jpeg");
    assert_eq!(sniff(&fitted.bytes), Some("image/jpeg"));
    assert!(fitted.bytes.len() <= EMBED_TARGET_BYTES, "{} bytes", fitted.bytes.len());
    let (w, h) = dimensions(&fitted.bytes);
    assert!(w <= MAX_SIDE && h <= MAX_SIDE, "{w}×{h}");
    assert_eq!(w * 2, h * 3, "the aspect ratio is kept: {w}×{h}");
}

#[test]
fn a_small_image_is_sent_as_it_came_and_a_wide_one_only_narrower() {
    let small = noisy_png(200, 100);
    assert_eq!(
        fit(&small, EMBED_TARGET_BYTES).unwrap(),
        Fitted { bytes: small.clone(), mime: "image/png", changed: false }
    );
    // Small in bytes but wider than providers read: scaled to the longest side.
    let mut wide = Vec::new();
    RgbImage::from_pixel(4000, 10, Rgb([255, 255, 255]))
        .write_to(&mut Cursor::new(&mut wide), ImageFormat::Png)
        .unwrap();
    let fitted = fit(&wide, EMBED_TARGET_BYTES).unwrap();
    assert_eq!(dimensions(&fitted.bytes).0, MAX_SIDE);
}

#[test]
fn what_is_not_an_image_or_would_decode_into_gigabytes_is_refused() {
    assert_eq!(fit(b"%PDF-1.7 not a picture", EMBED_TARGET_BYTES), Err(ImageError::NotAnImage));
    assert!(matches!(fit(b"\x89PNG\r\n\x1a\nbroken", EMBED_TARGET_BYTES), Err(ImageError::Unreadable(_))));
    // A valid header that claims 100 000 × 100 000 pixels (a decompression bomb).
    let bomb = png_header(100_000, 100_000);
    assert_eq!(fit(&bomb, 16), Err(ImageError::TooManyPixels { width: 100_000, height: 100_000 }));
}

/// A PNG's signature, IHDR (for a picture of the given size) and an empty IDAT: enough for
/// its size to be read.
fn png_header(width: u32, height: u32) -> Vec<u8> {
    let mut header = width.to_be_bytes().to_vec();
    header.extend(height.to_be_bytes());
    header.extend([8, 2, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    for (kind, data) in [(&b"IHDR"[..], header), (&b"IDAT"[..], Vec::new())] {
        let mut chunk = kind.to_vec();
        chunk.extend(&data);
        out.extend(u32::try_from(data.len()).unwrap().to_be_bytes());
        out.extend(&chunk);
        out.extend(crc32(&chunk).to_be_bytes());
    }
    out
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}
