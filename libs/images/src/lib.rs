//! Images made fit for a model. An image is sent again with every later call of its session,
//! so one too large or too wide is scaled down to a JPEG within upstream's embed budget
//! (`vision.embed_target_bytes`, 256 KiB; at most 1568 px on its longer side, past which
//! providers scale it down themselves anyway). Decoding runs on a hostile file: callers run
//! [`fit`] on a blocking thread.

use std::io::Cursor;

use image::{DynamicImage, ImageReader};

/// Upstream's default embed budget.
pub const EMBED_TARGET_BYTES: usize = 256 * 1024;
/// The longer side, in pixels, past which an image is scaled down.
pub const MAX_SIDE: u32 = 1568;
/// The largest picture decoded (width × height): a "decompression bomb" is refused, not
/// decoded into gigabytes.
const MAX_PIXELS: u64 = 50_000_000;

/// An image as it will be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    pub bytes: Vec<u8>,
    pub mime: &'static str,
    /// Whether it was scaled down or re-encoded.
    pub changed: bool,
}

/// Why an image could not be made fit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    #[error("the file is not a PNG, JPEG, GIF or WebP image")]
    NotAnImage,
    #[error("the image could not be read: {0}")]
    Unreadable(String),
    #[error("the image is {width}×{height} pixels, too large to read")]
    TooManyPixels { width: u32, height: u32 },
    #[error("the image could not be brought under {0} bytes")]
    TooLarge(usize),
}

/// An image's type from its first bytes (a platform that does not say, or says wrong).
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0x89, b'P', b'N', b'G', ..] => Some("image/png"),
        [0xFF, 0xD8, 0xFF, ..] => Some("image/jpeg"),
        [b'G', b'I', b'F', b'8', ..] => Some("image/gif"),
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => Some("image/webp"),
        _ => None,
    }
}

/// `bytes` within `target` bytes and [`MAX_SIDE`]: unchanged when it already is, else scaled
/// down (never up) and encoded as JPEG, at lower quality and then smaller until it fits.
pub fn fit(bytes: &[u8], target: usize) -> Result<Fitted, ImageError> {
    let mime = sniff(bytes).ok_or(ImageError::NotAnImage)?;
    let reader = || {
        ImageReader::new(Cursor::new(bytes)).with_guessed_format().map_err(|e| ImageError::Unreadable(e.to_string()))
    };
    let (width, height) = reader()?.into_dimensions().map_err(|e| ImageError::Unreadable(e.to_string()))?;
    if bytes.len() <= target && width.max(height) <= MAX_SIDE {
        return Ok(Fitted { bytes: bytes.to_vec(), mime, changed: false });
    }
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(ImageError::TooManyPixels { width, height });
    }
    let decoded = reader()?.decode().map_err(|e| ImageError::Unreadable(e.to_string()))?;
    let mut side = width.max(height).min(MAX_SIDE);
    // Each round trades quality first, then size: a screenshot stays legible longest.
    for _ in 0..8 {
        let scaled = if side < width.max(height) { decoded.thumbnail(side, side) } else { decoded.clone() };
        for quality in [85, 70, 55] {
            let jpeg = jpeg_of(&scaled, quality)?;
            if jpeg.len() <= target {
                return Ok(Fitted { bytes: jpeg, mime: "image/jpeg", changed: true });
            }
        }
        side = side * 3 / 4;
        if side < 64 {
            break;
        }
    }
    Err(ImageError::TooLarge(target))
}

fn jpeg_of(image: &DynamicImage, quality: u8) -> Result<Vec<u8>, ImageError> {
    let mut out = Vec::new();
    // JPEG has no alpha: flatten onto the image's own colours.
    let rgb = DynamicImage::ImageRgb8(image.to_rgb8());
    let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality);
    rgb.write_with_encoder(encoder).map_err(|e| ImageError::Unreadable(e.to_string()))?;
    Ok(out)
}

#[cfg(test)]
mod tests;
