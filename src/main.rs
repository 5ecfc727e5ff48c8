fn main() {
    std::process::exit(endpointd_main());
}

fn endpointd_main() -> i32 {
    eprintln!("endpointd: not implemented yet");
    1
}
