//! Print every idmap conformance case with the model's and the running
//! kernel's answers: `cargo run -p nssim-userns --example conformance_table`.

fn main() {
    for case in userns::conformance::conformance_cases() {
        let v = case.run();
        let kernel = match &v.kernel {
            Ok(k) => k.clone(),
            Err(skip) => format!("skipped: {skip}"),
        };
        let mark = match v.agree() {
            Some(true) => "agree",
            Some(false) => "DIFFER",
            None => "skip",
        };
        println!(
            "{mark:<6} {:<34} model: {:<28} kernel: {}",
            v.name, v.model, kernel
        );
    }
}
