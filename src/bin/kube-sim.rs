fn main() {
    eprintln!("kube-sim: not implemented yet");
    std::process::exit(1);
}
