//! Real image and PDF files for tests, made with real encoders (the
//! `image` crate's) and by hand after the PDF specification. Shared by
//! the integration tests and, through `#[path]`, the unit tests.

#![allow(dead_code)]

use image::{ImageFormat, RgbaImage};

/// A `w`×`h` picture (a gradient with a translucent corner) encoded as
/// `format`: "png", "jpeg", "gif" or "webp" (lossless).
pub fn image(format: &str, w: u32, h: u32) -> Vec<u8> {
    let img = RgbaImage::from_fn(w, h, |x, y| {
        let a = if x < w / 4 && y < h / 4 { 128 } else { 255 };
        image::Rgba([
            (x * 255 / w.max(1)) as u8,
            (y * 255 / h.max(1)) as u8,
            90,
            a,
        ])
    });
    let mut out = Vec::new();
    let mut cursor = std::io::Cursor::new(&mut out);
    match format {
        "png" => img.write_to(&mut cursor, ImageFormat::Png),
        "gif" => img.write_to(&mut cursor, ImageFormat::Gif),
        "webp" => img.write_to(&mut cursor, ImageFormat::WebP),
        "jpeg" => image::DynamicImage::ImageRgba8(img)
            .to_rgb8()
            .write_to(&mut cursor, ImageFormat::Jpeg),
        other => panic!("no sample format {other}"),
    }
    .expect("encode");
    out
}

/// A PDF of `pages` pages, each with a line of text, its xref table
/// correct. With `packed`, the page tree sits in a compressed object
/// stream behind an xref stream (as PDF 1.5 writers do).
pub fn pdf(pages: usize, packed: bool) -> Vec<u8> {
    let mut out = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::new();
    let kids: Vec<String> = (0..pages).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    let tree = format!(
        "<< /Type /Pages /Kids [{}] /Count {pages} >>",
        kids.join(" ")
    );
    let mut obj = |out: &mut Vec<u8>, n: usize, body: &[u8]| {
        offsets.push((n, out.len()));
        out.extend_from_slice(format!("{n} 0 obj\n").as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    };
    obj(&mut out, 1, b"<< /Type /Catalog /Pages 2 0 R >>");
    obj(
        &mut out,
        3,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    );
    for i in 0..pages {
        let text = format!("BT /F1 18 Tf 20 100 Td (Page {} of tern) Tj ET", i + 1);
        let page = format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
            5 + 2 * i
        );
        obj(&mut out, 4 + 2 * i, page.as_bytes());
        let stream = format!("<< /Length {} >>\nstream\n{text}\nendstream", text.len());
        obj(&mut out, 5 + 2 * i, stream.as_bytes());
    }
    let size = 4 + 2 * pages;
    if packed {
        // Object 2 (the page tree) inside object stream `size`.
        let header = "2 0 ";
        let plain = format!("{header}{tree}");
        let packed = miniz_oxide::deflate::compress_to_vec_zlib(plain.as_bytes(), 6);
        let mut body = format!(
            "<< /Type /ObjStm /N 1 /First {} /Filter /FlateDecode /Length {} >>\nstream\n",
            header.len(),
            packed.len()
        )
        .into_bytes();
        body.extend_from_slice(&packed);
        body.extend_from_slice(b"\nendstream");
        obj(&mut out, size, &body);
        // An xref stream would list the objects; its dictionary is what
        // matters here (a reader finds /Root through it).
        let xref_at = out.len();
        let xref = format!(
            "<< /Type /XRef /Size {} /Root 1 0 R /W [1 4 2] /Length 0 >>\nstream\n\nendstream",
            size + 2
        );
        obj(&mut out, size + 1, xref.as_bytes());
        out.extend_from_slice(format!("startxref\n{xref_at}\n%%EOF\n").as_bytes());
        return out;
    }
    obj(&mut out, 2, tree.as_bytes());
    offsets.sort();
    let xref_at = out.len();
    out.extend_from_slice(format!("xref\n0 {size}\n0000000000 65535 f \n").as_bytes());
    for (_, at) in &offsets {
        out.extend_from_slice(format!("{at:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{xref_at}\n%%EOF\n")
            .as_bytes(),
    );
    out
}

/// A PDF of the objects given (number, body), numbered as given, its
/// xref table correct and object 1 its catalog.
pub fn pdf_of(objects: &[(usize, String)]) -> Vec<u8> {
    let mut out = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let size = objects.iter().map(|(n, _)| n + 1).max().unwrap_or(1);
    let mut offsets = vec![None; size];
    for (n, body) in objects {
        offsets[*n] = Some(out.len());
        out.extend_from_slice(format!("{n} 0 obj\n{body}\nendobj\n").as_bytes());
    }
    let xref_at = out.len();
    out.extend_from_slice(format!("xref\n0 {size}\n").as_bytes());
    for at in &offsets {
        match at {
            Some(at) => out.extend_from_slice(format!("{at:010} 00000 n \n").as_bytes()),
            None => out.extend_from_slice(b"0000000000 65535 f \n"),
        }
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{xref_at}\n%%EOF\n")
            .as_bytes(),
    );
    out
}

/// A PDF of `pages` pages (at least 2) under a two-level page tree whose
/// nodes hold what the pages inherit: the root the media box and the
/// font, the second half's node a rotation of 90 degrees. Page 2 links
/// to page 1. Each page says "Page N of tern".
pub fn pdf_nested(pages: usize) -> Vec<u8> {
    let half = pages / 2;
    let page_num = |i: usize| 10 + 2 * i;
    let refs = |r: std::ops::Range<usize>| {
        r.map(|i| format!("{} 0 R", page_num(i)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut objects = vec![
        (1, "<< /Type /Catalog /Pages 2 0 R >>".to_string()),
        (
            2,
            format!(
                "<< /Type /Pages /Kids [4 0 R 5 0 R] /Count {pages} /MediaBox [0 0 300 200] \
                 /Resources << /Font << /F1 3 0 R >> >> >>"
            ),
        ),
        (
            3,
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_string(),
        ),
        (
            4,
            format!(
                "<< /Type /Pages /Parent 2 0 R /Kids [{}] /Count {half} >>",
                refs(0..half)
            ),
        ),
        (
            5,
            format!(
                "<< /Type /Pages /Parent 2 0 R /Kids [{}] /Count {} /Rotate 90 >>",
                refs(half..pages),
                pages - half
            ),
        ),
    ];
    for i in 0..pages {
        let parent = if i < half { 4 } else { 5 };
        let annots = if i == 1 {
            format!(
                " /Annots [<< /Type /Annot /Subtype /Link /Rect [0 0 50 50] /Dest [{} 0 R /Fit] >>]",
                page_num(0)
            )
        } else {
            String::new()
        };
        objects.push((
            page_num(i),
            format!(
                "<< /Type /Page /Parent {parent} 0 R /Contents {} 0 R{annots} >>",
                page_num(i) + 1
            ),
        ));
        let text = format!("BT /F1 18 Tf 20 100 Td (Page {} of tern) Tj ET", i + 1);
        objects.push((
            page_num(i) + 1,
            format!("<< /Length {} >>\nstream\n{text}\nendstream", text.len()),
        ));
    }
    pdf_of(&objects)
}

/// A notebook as Jupyter writes it (`indent=1`, sorted keys, nbformat
/// 4.5): a markdown cell, a code cell with a stream and a result, one
/// that failed (a coloured traceback), one that drew `png` (its base64
/// wrapped over lines, as Jupyter stores it), and an empty code cell.
pub fn notebook(png: &[u8]) -> String {
    use base64::Engine as _;
    let data = base64::engine::general_purpose::STANDARD.encode(png);
    let lines: Vec<String> = data
        .as_bytes()
        .chunks(76)
        .map(|c| format!("      \"{}\\n\"", std::str::from_utf8(c).unwrap()))
        .collect();
    format!(
        r##"{{
 "cells": [
  {{
   "cell_type": "markdown",
   "id": "intro",
   "metadata": {{}},
   "source": [
    "# Sales report\n",
    "Numbers for *March*, café included."
   ]
  }},
  {{
   "cell_type": "code",
   "execution_count": 1,
   "id": "load",
   "metadata": {{
    "scrolled": true,
    "zoom": 1.0
   }},
   "outputs": [
    {{
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "loaded 3 rows\n"
     ]
    }},
    {{
     "data": {{
      "text/html": [
       "<b>42</b>"
      ],
      "text/plain": [
       "42"
      ]
     }},
     "execution_count": 1,
     "metadata": {{}},
     "output_type": "execute_result"
    }}
   ],
   "source": [
    "rows = load()\n",
    "len(rows) * 14"
   ]
  }},
  {{
   "cell_type": "code",
   "execution_count": 2,
   "id": "oops",
   "metadata": {{}},
   "outputs": [
    {{
     "ename": "ZeroDivisionError",
     "evalue": "division by zero",
     "output_type": "error",
     "traceback": [
      "\u001b[0;31m---------------------------------------------------------------------------\u001b[0m",
      "\u001b[0;31mZeroDivisionError\u001b[0m: division by zero"
     ]
    }}
   ],
   "source": [
    "1 / 0"
   ]
  }},
  {{
   "cell_type": "code",
   "execution_count": 3,
   "id": "plot",
   "metadata": {{}},
   "outputs": [
    {{
     "data": {{
      "image/png": [
{}
      ],
      "text/plain": [
       "<Figure size 640x480 with 1 Axes>"
      ]
     }},
     "metadata": {{}},
     "output_type": "display_data"
    }}
   ],
   "source": [
    "plot(rows)"
   ]
  }},
  {{
   "cell_type": "code",
   "execution_count": null,
   "id": "empty",
   "metadata": {{}},
   "outputs": [],
   "source": []
  }}
 ],
 "metadata": {{
  "kernelspec": {{
   "display_name": "Python 3",
   "language": "python",
   "name": "python3"
  }},
  "language_info": {{
   "name": "python",
   "version": "3.11.7"
  }}
 }},
 "nbformat": 4,
 "nbformat_minor": 5
}}
"##,
        lines.join(",\n")
    )
}
