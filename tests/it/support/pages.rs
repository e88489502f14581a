//! A small web server on 127.0.0.1 for WebFetch tests: each path answers
//! with a page, a redirect or a stall, and every request is recorded, so
//! a test can tell what tern fetched and what it left alone.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone, Debug)]
pub enum Page {
    /// 200 with this content type and body.
    Ok(&'static str, Vec<u8>),
    /// A redirect status and its `location`.
    Redirect(u16, String),
    /// Headers, then silence for this long.
    Stall(Duration),
}

pub struct Site {
    pub url: String,
    hits: Arc<Mutex<Vec<String>>>,
}

impl Site {
    /// The paths asked for, in order.
    pub fn hits(&self) -> Vec<String> {
        self.hits.lock().unwrap().clone()
    }
}

/// Serves `route(path)` for every GET until the test process ends.
pub fn site(route: impl Fn(&str) -> Page + Send + Sync + 'static) -> Site {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a test site");
    let url = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(Mutex::new(Vec::new()));
    let (h, route) = (Arc::clone(&hits), Arc::new(route));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let (h, route) = (Arc::clone(&h), Arc::clone(&route));
            std::thread::spawn(move || {
                let Ok(clone) = conn.try_clone() else { return };
                let mut reader = BufReader::new(clone);
                let mut line = String::new();
                let _ = reader.read_line(&mut line);
                let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                loop {
                    let mut l = String::new();
                    if reader.read_line(&mut l).unwrap_or(0) == 0 || l.trim().is_empty() {
                        break;
                    }
                }
                h.lock().unwrap().push(path.clone());
                let _ = match route(&path) {
                    Page::Ok(ct, body) => conn
                        .write_all(
                            format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: {ct}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                                body.len()
                            )
                            .as_bytes(),
                        )
                        .and_then(|_| conn.write_all(&body)),
                    Page::Redirect(status, to) => conn.write_all(
                        format!(
                            "HTTP/1.1 {status} Moved\r\nlocation: {to}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        )
                        .as_bytes(),
                    ),
                    Page::Stall(d) => {
                        let _ = conn.write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 10\r\n\r\n",
                        );
                        std::thread::sleep(d);
                        Ok(())
                    }
                };
            });
        }
    });
    Site { url, hits }
}

/// An HTML page with this body.
pub fn html(body: &str) -> Page {
    Page::Ok(
        "text/html; charset=utf-8",
        format!(
            "<!doctype html><html><head><title>Test page</title></head><body>{body}</body></html>"
        )
        .into_bytes(),
    )
}
