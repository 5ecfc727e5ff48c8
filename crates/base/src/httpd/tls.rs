//! TLS helpers for the server: reading the subject of a verified client
//! certificate. It only reads DER that rustls has already verified; it never
//! verifies anything itself and never logs certificate contents.

/// One DER TLV: tag, contents, and the rest of the input after it.
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let tag = *input.first()?;
    let first = *input.get(1)?;
    let (len, hdr) = if first < 0x80 {
        (first as usize, 2)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 {
            return None;
        }
        let bytes = input.get(2..2 + n)?;
        let len = bytes.iter().fold(0usize, |acc, b| (acc << 8) | *b as usize);
        (len, 2 + n)
    };
    let body = input.get(hdr..hdr.checked_add(len)?)?;
    Some((tag, body, &input[hdr + len..]))
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
/// OID 2.5.4.3 (commonName), encoded contents.
const OID_CN: &[u8] = &[0x55, 0x04, 0x03];
/// OID 2.5.4.10 (organizationName), encoded contents.
const OID_O: &[u8] = &[0x55, 0x04, 0x0a];

/// The subject Name (its SEQUENCE contents) of a DER certificate.
fn subject(cert_der: &[u8]) -> Option<&[u8]> {
    let (tag, cert, _) = tlv(cert_der)?;
    if tag != SEQUENCE {
        return None;
    }
    let (tag, tbs, _) = tlv(cert)?;
    if tag != SEQUENCE {
        return None;
    }
    let mut rest = tbs;
    let (tag, _, after) = tlv(rest)?;
    if tag == 0xa0 {
        rest = after; // explicit version
    }
    // serialNumber, signature, issuer, validity, then subject.
    for _ in 0..4 {
        rest = tlv(rest)?.2;
    }
    let (tag, name, _) = tlv(rest)?;
    (tag == SEQUENCE).then_some(name)
}

/// Every value of one attribute type in a certificate's subject, in order.
fn subject_values(cert_der: &[u8], oid: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let Some(mut rdns) = subject(cert_der) else {
        return out;
    };
    while let Some((tag, set, rest)) = tlv(rdns) {
        rdns = rest;
        if tag != SET {
            continue;
        }
        let mut atvs = set;
        while let Some((_, atv, rest)) = tlv(atvs) {
            atvs = rest;
            let Some((0x06, got_oid, value)) = tlv(atv) else {
                continue;
            };
            if got_oid != oid {
                continue;
            }
            // UTF8String, PrintableString, IA5String, T61String: take as text.
            if let Some((_, v, _)) = tlv(value) {
                out.push(String::from_utf8_lossy(v).into_owned());
            }
        }
    }
    out
}

/// The subject common name of a DER certificate, if it has one.
pub fn common_name(cert_der: &[u8]) -> Option<String> {
    subject_values(cert_der, OID_CN).into_iter().next()
}

/// The subject organizations of a DER certificate (Kubernetes groups).
pub fn organizations(cert_der: &[u8]) -> Vec<String> {
    subject_values(cert_der, OID_O)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, KeyPair};

    fn cert(dn: &[(DnType, &str)]) -> Vec<u8> {
        let mut p = CertificateParams::new(vec!["localhost".to_string()]).expect("params");
        for (t, v) in dn {
            p.distinguished_name.push(t.clone(), *v);
        }
        let key = KeyPair::generate().expect("key");
        p.self_signed(&key).expect("sign").der().to_vec()
    }

    #[test]
    fn subject_fields_are_read() {
        let der = cert(&[
            (DnType::CommonName, "endpointd"),
            (DnType::OrganizationName, "system:masters"),
        ]);
        assert_eq!(common_name(&der).as_deref(), Some("endpointd"));
        assert_eq!(organizations(&der), vec!["system:masters".to_string()]);
        let der = cert(&[(DnType::OrganizationName, "only-org")]);
        // rcgen adds a default CN "rcgen self signed cert" unless removed.
        assert_eq!(organizations(&der), vec!["only-org".to_string()]);
    }

    #[test]
    fn garbage_is_not_a_certificate() {
        let cases: &[&[u8]] = &[
            b"",
            b"\x30",
            b"\x30\x85\x00",
            b"\x04\x02ab",
            b"\x30\x02\x30\x00",
        ];
        for c in cases {
            assert_eq!(common_name(c), None, "{c:?}");
        }
        let mut der = cert(&[(DnType::CommonName, "x")]);
        der.truncate(der.len() / 2);
        assert_eq!(common_name(&der), None);
    }
}
