//! Real images for tests that send pictures: the service decodes what it is sent, so a few
//! bytes that only start like a JPEG are refused as they would be in production.

use std::io::Cursor;

use image::{ImageFormat, Rgb, RgbImage};

/// A JPEG of `width` × `height` pixels with a gradient and light noise (photo-like: it does not
/// compress to nothing).
pub fn jpeg(width: u32, height: u32) -> image::ImageResult<Vec<u8>> {
    encode(picture(width, height), ImageFormat::Jpeg)
}

/// A PNG of `width` × `height` pixels, as [`jpeg`] draws it.
pub fn png(width: u32, height: u32) -> image::ImageResult<Vec<u8>> {
    encode(picture(width, height), ImageFormat::Png)
}

fn picture(width: u32, height: u32) -> RgbImage {
    let mut seed = 0x9e37_79b9_u32;
    RgbImage::from_fn(width, height, |x, y| {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        let noise = (seed & 0x1f) as u8;
        Rgb([(x * 255 / width.max(1)) as u8 ^ noise, (y * 255 / height.max(1)) as u8 ^ noise, 128 ^ noise])
    })
}

fn encode(picture: RgbImage, format: ImageFormat) -> image::ImageResult<Vec<u8>> {
    let mut out = Vec::new();
    picture.write_to(&mut Cursor::new(&mut out), format)?;
    Ok(out)
}
