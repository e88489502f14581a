//! Mozilla's roots as ureq takes them.
//!
//! ureq trusts a list of certificates, and replaces its roots when given
//! any; tern keeps Mozilla's roots and adds `SSL_CERT_FILE`'s. Carrying
//! the roots as whole certificates (webpki-root-certs) costs about 127 KB
//! of the binary; as trust anchors (webpki-roots: subject, key and name
//! constraints, all a verifier reads of a root) about 54 KB. So the
//! anchors are carried and each is written back into the smallest
//! certificate that holds it: a v3 certificate, signed by nobody (a root's
//! signature is never checked), whose subject, key and name constraints
//! are the anchor's. rustls reads the same anchor back out of it
//! (`the_anchors_survive_the_round_trip`).

use std::sync::OnceLock;

use rustls::pki_types::TrustAnchor;

/// sha256WithRSAEncryption: the algorithm field must name one; nothing
/// checks it.
const ALGORITHM: &[u8] = &[
    0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b, 0x05, 0x00,
];
/// Valid from 2000 to 2049 (UTCTime); roots' validity is not checked.
const VALIDITY: &[u8] = b"\x30\x1e\x17\x0d000101000000Z\x17\x0d491231235959Z";
/// id-ce-nameConstraints, 2.5.29.30.
const NAME_CONSTRAINTS: &[u8] = &[0x06, 0x03, 0x55, 0x1d, 0x1e];

/// Every Mozilla root as a certificate: written once per process into
/// one buffer that lives as long as the process (each HTTP agent borrows
/// the same bytes; copying them per agent cost most of a short run).
pub fn mozilla() -> &'static [&'static [u8]] {
    static ROOTS: OnceLock<Vec<&'static [u8]>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let mut all = Vec::with_capacity(64 * 1024);
        let mut ends = Vec::with_capacity(webpki_roots::TLS_SERVER_ROOTS.len());
        for anchor in webpki_roots::TLS_SERVER_ROOTS {
            all.extend_from_slice(&certificate(anchor));
            ends.push(all.len());
        }
        let all: &'static [u8] = Box::leak(all.into_boxed_slice());
        let mut start = 0;
        ends.into_iter()
            .map(|end| {
                let one = &all[start..end];
                start = end;
                one
            })
            .collect()
    })
}

/// The certificates of a PEM bundle (`SSL_CERT_FILE`), as DER.
///
/// rustls's PEM reader decodes in constant time, as a private key needs;
/// a system bundle (~220 KB, common in containers) cost about 11M
/// instructions that way, more than the rest of a one-turn run. These are
/// public certificates, so the ordinary decoder serves. A block that does
/// not decode is left out, as rustls's reader leaves out what it cannot
/// read.
pub fn pem_certificates(pem: &[u8]) -> Vec<Vec<u8>> {
    use base64::Engine as _;
    const BEGIN: &[u8] = b"-----BEGIN CERTIFICATE-----";
    const END: &[u8] = b"-----END CERTIFICATE-----";
    let mut out = Vec::new();
    let mut text = Vec::new();
    let mut rest = pem;
    while let Some(at) = memchr::memmem::find(rest, BEGIN) {
        let body = &rest[at + BEGIN.len()..];
        let Some(end) = memchr::memmem::find(body, END) else {
            break;
        };
        // Line by line: the blanks are at the lines' ends (a byte-by-byte
        // filter was a megainstruction of its own).
        let block = &body[..end];
        text.clear();
        let mut from = 0;
        for nl in memchr::memchr_iter(b'\n', block).chain([block.len()]) {
            text.extend_from_slice(block[from..nl].trim_ascii());
            from = nl + 1;
        }
        if text.iter().any(u8::is_ascii_whitespace) {
            text.retain(|b| !b.is_ascii_whitespace());
        }
        if let Ok(der) = base64::engine::general_purpose::STANDARD.decode(&text) {
            out.push(der);
        }
        rest = &body[end + END.len()..];
    }
    out
}

/// Appends one DER element.
fn der(tag: u8, content: &[u8], out: &mut Vec<u8>) {
    out.push(tag);
    let n = content.len();
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let bytes = n.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
}

/// The certificate that carries this anchor.
pub fn certificate(anchor: &TrustAnchor<'_>) -> Vec<u8> {
    let mut tbs = Vec::with_capacity(512);
    tbs.extend_from_slice(&[0xa0, 0x03, 0x02, 0x01, 0x02]); // version 3
    tbs.extend_from_slice(&[0x02, 0x01, 0x01]); // serial number 1
    tbs.extend_from_slice(ALGORITHM);
    der(0x30, &anchor.subject, &mut tbs); // issuer: itself
    tbs.extend_from_slice(VALIDITY);
    der(0x30, &anchor.subject, &mut tbs);
    der(0x30, &anchor.subject_public_key_info, &mut tbs);
    if let Some(constraints) = &anchor.name_constraints {
        // The anchor holds NameConstraints' contents: the SEQUENCE around
        // them goes back in the extension's value.
        let mut inner = Vec::new();
        der(0x30, constraints, &mut inner);
        let mut value = Vec::new();
        der(0x04, &inner, &mut value);
        let mut extension = NAME_CONSTRAINTS.to_vec();
        extension.extend_from_slice(&[0x01, 0x01, 0xff]); // critical
        extension.extend_from_slice(&value);
        let mut one = Vec::new();
        der(0x30, &extension, &mut one);
        let mut all = Vec::new();
        der(0x30, &one, &mut all);
        der(0xa3, &all, &mut tbs);
    }
    let mut body = Vec::with_capacity(tbs.len() + 32);
    der(0x30, &tbs, &mut body);
    body.extend_from_slice(ALGORITHM);
    der(0x03, &[0x00], &mut body); // an empty signature
    let mut cert = Vec::with_capacity(body.len() + 4);
    der(0x30, &body, &mut cert);
    cert
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_anchors_survive_the_round_trip() {
        let mut constrained = 0;
        for (i, anchor) in webpki_roots::TLS_SERVER_ROOTS.iter().enumerate() {
            let mut store = rustls::RootCertStore::empty();
            store
                .add(rustls::pki_types::CertificateDer::from(certificate(anchor)))
                .unwrap_or_else(|e| {
                    panic!(
                        "root {i} (constrained: {}): {e:?}",
                        anchor.name_constraints.is_some()
                    )
                });
            let back = &store.roots[0];
            assert_eq!(back.subject, anchor.subject);
            assert_eq!(back.subject_public_key_info, anchor.subject_public_key_info);
            assert_eq!(back.name_constraints, anchor.name_constraints);
            constrained += usize::from(anchor.name_constraints.is_some());
        }
        assert!(webpki_roots::TLS_SERVER_ROOTS.len() > 100);
        // The shared list holds the same certificates, once.
        let shared = mozilla();
        assert_eq!(shared.len(), webpki_roots::TLS_SERVER_ROOTS.len());
        assert_eq!(
            shared[7],
            certificate(&webpki_roots::TLS_SERVER_ROOTS[7]).as_slice()
        );
        assert!(std::ptr::eq(shared, mozilla()));
        // Mozilla constrains a few roots to some names; those constraints
        // must come through, or such a root would vouch for any name.
        assert!(constrained > 0, "no constrained root to check");
    }

    /// The quick reader finds what rustls's reader finds: in a bundle of
    /// every Mozilla root written as PEM (64 columns, LF and CRLF, text
    /// and a private key between them), and in the test CA.
    #[test]
    fn the_quick_pem_reader_agrees_with_rustls() {
        use base64::Engine as _;
        let mut bundle = String::from("# a system bundle\n");
        for (i, anchor) in webpki_roots::TLS_SERVER_ROOTS.iter().enumerate() {
            let b64 = base64::engine::general_purpose::STANDARD.encode(certificate(anchor));
            let eol = if i % 2 == 0 { "\n" } else { "\r\n" };
            bundle.push_str(&format!("Root {i}{eol}-----BEGIN CERTIFICATE-----{eol}"));
            for line in b64.as_bytes().chunks(64) {
                bundle.push_str(std::str::from_utf8(line).unwrap());
                bundle.push_str(eol);
            }
            bundle.push_str(&format!("-----END CERTIFICATE-----{eol}"));
            if i == 3 {
                bundle.push_str("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
            }
        }
        let fixture = include_bytes!("../../tests/fixtures/extra-ca.pem");
        for pem in [bundle.as_bytes(), fixture.as_slice()] {
            let theirs: Vec<Vec<u8>> = ureq::tls::parse_pem(pem)
                .filter_map(|item| match item {
                    Ok(ureq::tls::PemItem::Certificate(c)) => Some(c.der().to_vec()),
                    _ => None,
                })
                .collect();
            assert!(!theirs.is_empty());
            assert_eq!(pem_certificates(pem), theirs);
        }
        assert!(
            pem_certificates(b"-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n")
                .is_empty()
        );
        assert!(pem_certificates(b"not a pem").is_empty());
    }

    #[test]
    fn long_contents_get_long_lengths() {
        let mut out = Vec::new();
        der(0x04, &[7u8; 300], &mut out);
        assert_eq!(&out[..4], &[0x04, 0x82, 0x01, 0x2c]);
        assert_eq!(out.len(), 304);
    }
}
