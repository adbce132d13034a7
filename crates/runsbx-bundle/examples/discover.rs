//! Prints what discovery finds for a command and the config it generates,
//! with a throwaway workdir and no seccomp/Landlock policy:
//! `cargo run -p runsbx-bundle --example discover -- python3 -c pass`
use std::time::Instant;

fn main() {
    let cmd: Vec<String> = std::env::args().skip(1).collect();
    let path = std::env::var("PATH").unwrap_or_default();
    let t = Instant::now();
    let d = match runsbx_bundle::discover(&cmd, &path, &[]) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("discover: {e}");
            std::process::exit(1);
        }
    };
    eprintln!("discovery took {:?}", t.elapsed());
    let workdir = std::env::temp_dir();
    let o = runsbx_bundle::GenerateOptions {
        env: runsbx_bundle::scrub_env(std::env::vars(), &[], &workdir),
        workdir,
        host_ids: (1000, 1000),
        rlimits: vec![],
        seccomp: None,
        landlock: None,
        net: false,
    };
    match runsbx_bundle::generate(&d, &o) {
        Ok(c) => println!(
            "{}",
            serde_json::to_string_pretty(&c.to_json().unwrap()).unwrap()
        ),
        Err(e) => {
            eprintln!("generate: {e}");
            std::process::exit(1);
        }
    }
}
