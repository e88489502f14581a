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

    #[test]
    fn long_contents_get_long_lengths() {
        let mut out = Vec::new();
        der(0x04, &[7u8; 300], &mut out);
        assert_eq!(&out[..4], &[0x04, 0x82, 0x01, 0x2c]);
        assert_eq!(out.len(), 304);
    }
}
