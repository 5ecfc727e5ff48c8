//! Bounds on one paginated LIST, shared by the informers' reflector and the
//! one-shot reads of `endpointd explain`: at most `max_items` objects and
//! `max_pages` pages, and no `continue` token twice (a server that repeats
//! one would page forever). Pure bookkeeping: it never reads the network
//! and never holds the items themselves.

use std::collections::HashSet;
use std::fmt;

/// Pages per LIST at most (`kubernetes.max_list_items` has a config key; the
/// page bound is fixed: 10,000 pages of `limit=500` is 5 million objects).
pub const DEFAULT_MAX_LIST_PAGES: u32 = 10_000;

/// Why a LIST was ended early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PagingError {
    /// More objects than `max_items`.
    TooManyItems(usize),
    /// More pages than `max_pages`.
    TooManyPages(u32),
    /// A continue token came a second time.
    Repeated,
}

impl fmt::Display for PagingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PagingError::TooManyItems(n) => write!(
                f,
                "LIST delivered more than {n} objects (kubernetes.max_list_items)"
            ),
            PagingError::TooManyPages(n) => write!(f, "LIST took more than {n} pages"),
            PagingError::Repeated => write!(
                f,
                "LIST paging does not advance: the server sent a continue token again"
            ),
        }
    }
}

impl std::error::Error for PagingError {}

/// The running count of one LIST.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paging {
    max_items: usize,
    max_pages: u32,
    items: usize,
    /// Hashes of the continue tokens seen so far, one per page (tokens can
    /// be long; only equality matters).
    tokens: HashSet<u64>,
}

impl Paging {
    /// A new LIST with these bounds.
    pub fn new(max_items: usize, max_pages: u32) -> Self {
        Paging {
            max_items,
            max_pages,
            items: 0,
            tokens: HashSet::new(),
        }
    }

    /// Account for one page of `n` objects that ended with `continue_token`.
    /// `Ok(Some(token))`: ask for the next page with it; `Ok(None)`: the
    /// LIST is complete; `Err`: end the LIST.
    pub fn page(
        &mut self,
        n: usize,
        continue_token: Option<String>,
    ) -> Result<Option<String>, PagingError> {
        self.items = self.items.saturating_add(n);
        if self.items > self.max_items {
            return Err(PagingError::TooManyItems(self.max_items));
        }
        let Some(token) = continue_token.filter(|c| !c.is_empty()) else {
            return Ok(None);
        };
        if self.tokens.len() + 1 >= self.max_pages as usize {
            return Err(PagingError::TooManyPages(self.max_pages));
        }
        if !self.tokens.insert(token_hash(&token)) {
            return Err(PagingError::Repeated);
        }
        Ok(Some(token))
    }
}

fn token_hash(token: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    token.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    type Pages = Vec<(usize, Option<&'static str>)>;
    type Outcome = Result<Option<String>, PagingError>;

    /// Pages `(objects, continue)` → the outcome of the last page.
    fn run(pages: &[(usize, Option<&str>)]) -> Outcome {
        let mut p = Paging::new(3, 4);
        let mut last = Ok(None);
        for (n, c) in pages {
            last = p.page(*n, c.map(str::to_string));
            if last.is_err() {
                break;
            }
        }
        last
    }

    #[test]
    fn bounds_end_a_list() {
        let table: Vec<(Pages, Outcome)> = vec![
            (vec![(3, None)], Ok(None)),
            (vec![(2, Some("c1"))], Ok(Some("c1".into()))),
            (vec![(2, Some("c1")), (1, Some(""))], Ok(None)),
            (vec![(4, None)], Err(PagingError::TooManyItems(3))),
            (
                vec![(2, Some("c1")), (2, None)],
                Err(PagingError::TooManyItems(3)),
            ),
            (
                vec![(0, Some("a")), (0, Some("b")), (0, Some("a"))],
                Err(PagingError::Repeated),
            ),
            (
                vec![
                    (0, Some("a")),
                    (0, Some("b")),
                    (0, Some("c")),
                    (0, Some("d")),
                ],
                Err(PagingError::TooManyPages(4)),
            ),
            (
                vec![(0, Some("a")), (0, Some("b")), (0, Some("c")), (0, None)],
                Ok(None),
            ),
        ];
        for (pages, want) in table {
            assert_eq!(run(&pages), want, "{pages:?}");
        }
    }
}
