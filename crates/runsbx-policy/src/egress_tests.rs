use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn list(entries: &[&str], ranges: &[&str]) -> Allowlist {
    let s = |v: &[&str]| v.iter().map(|e| e.to_string()).collect::<Vec<_>>();
    Allowlist::parse(&s(entries), &s(ranges)).unwrap()
}

#[test]
fn ipv4_in_every_form_inet_aton_reads() {
    let loop1 = Some(Ipv4Addr::new(127, 0, 0, 1));
    for s in [
        "127.0.0.1",
        "2130706433",
        "0x7f000001",
        "0177.0.0.1",
        "0x7f.1",
        "127.1",
        "127.0.1",
        "0177.0.0.01",
        "0X7F.0.0.1",
    ] {
        assert_eq!(parse_ipv4_any(s), loop1, "{s}");
    }
    assert_eq!(parse_ipv4_any("0"), Some(Ipv4Addr::UNSPECIFIED));
    assert_eq!(parse_ipv4_any("010.0.0.1"), Some(Ipv4Addr::new(8, 0, 0, 1)));
    for bad in [
        "",
        "1.2.3.4.5",
        "256.1.1.1",
        "1.2.3.256",
        "09.1.1.1",
        "0x1g",
        "1..2",
        "4294967296",
        "1.16777216",
    ] {
        assert_eq!(parse_ipv4_any(bad), None, "{bad}");
    }
}

#[test]
fn hosts_are_canonical_and_numbers_are_addresses() {
    let name = |s: &str| Host::Name(s.into());
    assert_eq!(parse_host("PyPI.org"), Ok(name("pypi.org")));
    assert_eq!(parse_host("pypi.org."), Ok(name("pypi.org")));
    assert_eq!(parse_host("files_1.example"), Ok(name("files_1.example")));
    let lo = Ok(Host::Ip(ip("127.0.0.1")));
    for s in ["2130706433", "0177.0.0.1", "0x7f.1", "127.1", "127.0.0.1."] {
        assert_eq!(parse_host(s), lo, "{s}");
    }
    assert_eq!(parse_host("[::1]"), Ok(Host::Ip(ip("::1"))));
    // An IPv4-mapped IPv6 address is the IPv4 address.
    assert_eq!(parse_host("[::ffff:127.0.0.1]"), lo);
    assert_eq!(parse_host("[::ffff:7f00:1]"), lo);
    for bad in [
        "",
        ".",
        "a..b",
        "pypi.org..",
        "-a.com",
        "a-.com",
        "a b.com",
        "a%2e.com",
        "ex\u{0430}mple.com",
        "::1",
        "[fe80::1%eth0]",
        "[127.0.0.1]",
        "1.2.3.4.5",
        "example.0x1",
        "example.123",
        "a/b",
        "user@host",
    ] {
        assert!(parse_host(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn rules_parse_with_ports() {
    let r = Rule::parse("pypi.org").unwrap();
    assert_eq!(r.pattern, Pattern::Exact("pypi.org".into()));
    assert_eq!(r.ports, vec![80, 443]);
    let r = Rule::parse("*.PythonHosted.org:443").unwrap();
    assert_eq!(r.pattern, Pattern::Subdomains("pythonhosted.org".into()));
    assert_eq!(r.ports, vec![443]);
    assert_eq!(
        Rule::parse("[2001:db8::1]:8443").unwrap(),
        Rule {
            pattern: Pattern::Ip(ip("2001:db8::1")),
            ports: vec![8443]
        }
    );
    assert_eq!(
        Rule::parse("0x7f.1:80").unwrap().pattern,
        Pattern::Ip(ip("127.0.0.1"))
    );
    for bad in [
        "*",
        "*.",
        "a.*.com",
        "*example.com",
        "*.1.2.3.4",
        "pypi.org:0",
        "pypi.org:65536",
        "pypi.org:+443",
        "pypi.org:",
        "::1:443",
        "[::1",
        "[::1]x",
    ] {
        assert!(Rule::parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn matching_names_wildcards_literals_and_ports() {
    let l = list(
        &["pypi.org", "*.pythonhosted.org:443", "192.0.2.7:8080"],
        &[],
    );
    let ok = |h: &str, p: u16| l.permits(&parse_host(h).unwrap(), p).is_ok();
    assert!(ok("pypi.org", 443));
    assert!(ok("PYPI.ORG.", 80));
    assert!(!ok("pypi.org", 8080));
    assert!(!ok("evilpypi.org", 443));
    assert!(!ok("pypi.org.evil.com", 443));
    assert!(ok("files.pythonhosted.org", 443));
    assert!(ok("a.b.pythonhosted.org", 443));
    assert!(!ok("pythonhosted.org", 443));
    assert!(!ok("xpythonhosted.org", 443));
    assert!(!ok("files.pythonhosted.org", 80));
    assert!(ok("192.0.2.7", 8080));
    // The same address in another spelling is the same literal.
    assert!(ok("3221225991", 8080));
    assert!(ok("[::ffff:192.0.2.7]", 8080));
    assert!(!ok("192.0.2.7", 443));
    // A literal never matches a name entry.
    let e = l
        .permits(&parse_host("151.101.0.223").unwrap(), 443)
        .unwrap_err();
    assert!(e.contains("IP address not in --allow-net"), "{e}");
    let e = l.permits(&parse_host("pypi.org").unwrap(), 22).unwrap_err();
    assert_eq!(e, "port 22 of pypi.org is not in --allow-net");
}

#[test]
fn only_public_unicast_unless_a_range_allows() {
    let l = list(&["x.test"], &[]);
    for (a, why) in [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local (cloud metadata)"),
        ("100.64.0.1", "shared address space (CGNAT)"),
        ("0.0.0.0", "this network"),
        ("224.0.0.1", "multicast"),
        ("255.255.255.255", "reserved"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:169.254.169.254", "link-local (cloud metadata)"),
        ("64:ff9b::a9fe:a9fe", "NAT64"),
        ("2002:7f00:1::", "6to4"),
        ("2001:0:4136:e378::1", "IETF protocol assignments (Teredo)"),
        ("fd00::1", "unique local (private)"),
        ("fe80::1", "link-local"),
        ("ff02::1", "multicast"),
    ] {
        let e = l.address_ok(ip(a), &[]).unwrap_err();
        assert!(e.contains(why), "{a}: {e}");
    }
    for a in [
        "151.101.0.223",
        "8.8.8.8",
        "172.32.0.1",
        "2a04:4e42::223",
        "::ffff:8.8.8.8",
    ] {
        assert_eq!(l.address_ok(ip(a), &[]), Ok(()), "{a}");
    }
    // The host's own public address.
    assert!(l.address_ok(ip("8.8.8.8"), &[ip("8.8.8.8")]).is_err());
    let l = list(&["x.test"], &["127.0.0.0/8", "::1", "fd00::/8"]);
    assert_eq!(l.address_ok(ip("127.0.0.2"), &[]), Ok(()));
    assert_eq!(l.address_ok(ip("::ffff:127.0.0.2"), &[]), Ok(()));
    assert_eq!(l.address_ok(ip("::1"), &[]), Ok(()));
    assert_eq!(l.address_ok(ip("fd12::1"), &[]), Ok(()));
    assert!(l.address_ok(ip("10.0.0.1"), &[]).is_err());
    assert!(l.address_ok(ip("::2"), &[]).is_err());
}

#[test]
fn ranges_parse() {
    assert_eq!(
        Cidr::parse("10.0.0.0/8").unwrap(),
        Cidr {
            addr: ip("10.0.0.0"),
            bits: 8
        }
    );
    assert_eq!(Cidr::parse("::1").unwrap().bits, 128);
    assert!(Cidr::parse("0.0.0.0/0").unwrap().contains(ip("1.2.3.4")));
    assert!(!Cidr::parse("0.0.0.0/0").unwrap().contains(ip("::2")));
    for bad in [
        "10.0.0.0/33",
        "::/129",
        "10/8",
        "0177.0.0.1/8",
        "x",
        "10.0.0.0/",
    ] {
        assert!(Cidr::parse(bad).is_err(), "{bad}");
    }
    let e = Allowlist::parse(&["a:b".into()], &[]).unwrap_err();
    assert!(e.starts_with("--allow-net "), "{e}");
}
