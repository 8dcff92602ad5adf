//! Printing: aligned tables, shapes and sizes, and stdout writes that end
//! quietly when the reader goes away (`trt tokenize | head`).
// Most helpers here format engines and plans (inspect, bench, build, demo):
// unused in a build without the tensorrt feature.
#![cfg_attr(not(feature = "tensorrt"), allow(dead_code))]

use std::io::Write;

/// Write `text` to stdout. A closed pipe ends the process with success (the
/// reader has what it wanted); any other write error is reported and exits 1.
pub fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

/// A shape as TensorRT prints it, -1 for dynamic dimensions: `[-1, 128]`.
pub fn shape(dims: &[i64]) -> String {
    format!("[{}]", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "))
}

/// A concrete shape in the flag syntax: `8x128` (`scalar` for rank 0).
pub fn dims(d: &[i64]) -> String {
    if d.is_empty() {
        return "scalar".into();
    }
    d.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x")
}

/// Indices of the dynamic (-1) dimensions.
pub fn dynamic_dims(d: &[i64]) -> Vec<usize> {
    d.iter().enumerate().filter(|(_, &v)| v < 0).map(|(i, _)| i).collect()
}

/// `95.5 MB`, `512 B`.
pub fn bytes(n: usize) -> String {
    const UNITS: [&str; 4] = ["kB", "MB", "GB", "TB"];
    if n < 1000 {
        return format!("{n} B");
    }
    let mut v = n as f64;
    let mut unit = "B";
    for u in UNITS {
        if v < 1000.0 {
            break;
        }
        v /= 1000.0;
        unit = u;
    }
    format!("{v:.1} {unit}")
}

/// A plain text table: left-aligned columns, two spaces apart, indented.
#[derive(Debug, Default)]
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new(headers: &[&str]) -> Self {
        Table { rows: vec![headers.iter().map(|h| (*h).to_owned()).collect()] }
    }

    /// Add a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table, each line prefixed with `indent`.
    pub fn render(&self, indent: &str) -> String {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> =
            (0..columns).map(|c| self.rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)).collect();
        let mut out = String::new();
        for row in &self.rows {
            let mut line = String::from(indent);
            for (c, cell) in row.iter().enumerate() {
                if c + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    line.push_str(&format!("{cell:<w$}  ", w = widths[c]));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(shape(&[-1, 128]), "[-1, 128]");
        assert_eq!(dims(&[8, 128]), "8x128");
        assert_eq!(dims(&[]), "scalar");
        assert_eq!(dynamic_dims(&[-1, 4, -1]), vec![0, 2]);
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(95_512_345), "95.5 MB");
        let mut t = Table::new(&["a", "bb"]);
        t.row(vec!["long".into(), "x".into()]);
        assert_eq!(t.render(" "), " a     bb\n long  x\n");
    }
}
