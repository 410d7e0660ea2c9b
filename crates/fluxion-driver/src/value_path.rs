//! The path of a part within an argument (`x[2].Cons[1]`), for the error that names
//! it: `--args` decoding (json.rs) and the Python package's conversions share it.

/// Where a part sits in a whole value (an argument), spelt out only for an error: a
/// path held as text at every level would cost the square of the depth.
pub enum ValuePath<'a> {
    Root(&'a str),
    /// `parent[i]`.
    Index(&'a ValuePath<'a>, usize),
    /// `parent.Ctor[i]`.
    Field(&'a ValuePath<'a>, &'a str, usize),
}

impl std::fmt::Display for ValuePath<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut steps = Vec::new();
        let mut at = self;
        let root = loop {
            match at {
                ValuePath::Root(root) => break root,
                ValuePath::Index(parent, _) | ValuePath::Field(parent, _, _) => {
                    steps.push(at);
                    at = parent;
                }
            }
        };
        f.write_str(root)?;
        steps.reverse();
        // A path thousands of levels deep is shown by its ends.
        const ENDS: usize = 8;
        let write_step = |f: &mut std::fmt::Formatter<'_>, step: &ValuePath<'_>| match step {
            ValuePath::Index(_, i) => write!(f, "[{i}]"),
            ValuePath::Field(_, name, i) => write!(f, ".{name}[{i}]"),
            ValuePath::Root(_) => Ok(()),
        };
        if steps.len() > 3 * ENDS {
            for step in &steps[..ENDS] {
                write_step(f, step)?;
            }
            write!(f, "…({} levels)…", steps.len() - 2 * ENDS)?;
            for step in &steps[steps.len() - ENDS..] {
                write_step(f, step)?;
            }
            return Ok(());
        }
        for step in steps {
            write_step(f, step)?;
        }
        Ok(())
    }
}
