//! Errors of the topology builders: every problem found, each naming where it is.

use std::fmt;

/// One problem in a spec or in a set of node records, with the place it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Where: a spec field path (`fabric.clos.tiers[1].nodes_per_domain`) or `node "gpu-3"`.
    pub place: String,
    /// What was wrong and what was expected.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place, self.message)
    }
}

/// A cluster could not be built. Holds every problem found, not only the first.
#[derive(Debug, thiserror::Error)]
pub struct TopologyError {
    /// The problems, in input order; never empty.
    pub problems: Vec<Problem>,
}

impl TopologyError {
    pub(crate) fn new(problems: Vec<Problem>) -> Self {
        debug_assert!(!problems.is_empty());
        Self { problems }
    }
}

impl fmt::Display for TopologyError {
    /// One line: the first problems joined by `; `, with a count of any others.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 3;
        for (i, p) in self.problems.iter().take(SHOWN).enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{p}")?;
        }
        if self.problems.len() > SHOWN {
            write!(f, " (and {} more)", self.problems.len() - SHOWN)?;
        }
        Ok(())
    }
}

pub(crate) fn problem(place: impl Into<String>, message: impl Into<String>) -> Problem {
    Problem {
        place: place.into(),
        message: message.into(),
    }
}
