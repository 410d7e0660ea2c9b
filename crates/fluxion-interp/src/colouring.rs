//! `%colour` and `%rows_of` (fluxion-ad's `sparse_jacobian.rs`): the greedy first-fit
//! colouring of a compressed-row pattern's columns (two sharing a row differ) or rows
//! (two sharing a column differ), in natural order. The native runtime has the same
//! algorithm (`runtime.c`, `fx_colour`).

/// The row of each nonzero of a pattern with row offsets `offsets`.
pub(crate) fn rows_of(offsets: &[i64]) -> Vec<i64> {
    let mut rows = Vec::new();
    for (i, w) in offsets.windows(2).enumerate() {
        rows.extend(std::iter::repeat_n(i as i64, (w[1] - w[0]).max(0) as usize));
    }
    rows
}

/// The colours of the columns (`by_rows`: of the rows) of the pattern (`offsets`,
/// `cols`) with `n` columns; an error for a malformed pattern. With `limit` > 0 the
/// colouring stops at the first item that needs colour `limit` (it gets that colour,
/// the items after it -1): a caller comparing with a colouring of `limit` colours
/// learns this one is no better without finishing it (a dense column makes colouring
/// the rows quadratic in its length).
pub(crate) fn colour(
    offsets: &[i64],
    cols: &[i64],
    n: i64,
    by_rows: bool,
    limit: i64,
) -> Result<Vec<i64>, String> {
    let m = offsets.len().saturating_sub(1);
    let n = usize::try_from(n).map_err(|_| "internal error: a negative number of columns")?;
    let well_formed = offsets.first().is_none_or(|o| *o == 0)
        && offsets.windows(2).all(|w| w[0] <= w[1])
        && offsets.last().is_none_or(|o| *o as usize == cols.len())
        && cols.iter().all(|c| (0..n as i64).contains(c));
    if !well_formed {
        return Err("internal error: a malformed sparsity pattern".to_string());
    }
    // The transpose: the rows of each column.
    let mut col_start = vec![0usize; n + 1];
    for c in cols {
        col_start[*c as usize + 1] += 1;
    }
    for j in 0..n {
        col_start[j + 1] += col_start[j];
    }
    let mut fill = col_start.clone();
    let mut col_rows = vec![0usize; cols.len()];
    for i in 0..m {
        for c in &cols[offsets[i] as usize..offsets[i + 1] as usize] {
            let j = *c as usize;
            col_rows[fill[j]] = i;
            fill[j] += 1;
        }
    }
    let row_cols: Vec<usize> = cols.iter().map(|c| *c as usize).collect();
    let row_start: Vec<usize> = offsets.iter().map(|o| *o as usize).collect();
    // Items (columns or rows), each linked through its groups (rows or columns) to
    // the items it conflicts with.
    let (items, item_start, item_groups, group_start, group_items) = if by_rows {
        (m, &row_start, &row_cols, &col_start, &col_rows)
    } else {
        (n, &col_start, &col_rows, &row_start, &row_cols)
    };
    let mut colours = vec![-1i64; items];
    let mut mark = vec![usize::MAX; items + 1];
    for u in 0..items {
        for &g in &item_groups[item_start[u]..item_start[u + 1]] {
            for &v in &group_items[group_start[g]..group_start[g + 1]] {
                if colours[v] >= 0 {
                    mark[colours[v] as usize] = u;
                }
            }
        }
        colours[u] = (0..).find(|c| mark[*c] != u).unwrap_or(0) as i64;
        if limit > 0 && colours[u] >= limit {
            break;
        }
    }
    Ok(colours)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The compressed rows of a pattern given row by row.
    fn csr(rows: &[&[i64]]) -> (Vec<i64>, Vec<i64>) {
        let mut offsets = vec![0];
        let mut cols = Vec::new();
        for r in rows {
            cols.extend_from_slice(r);
            offsets.push(cols.len() as i64);
        }
        (offsets, cols)
    }

    /// Whether no two items of one colour share a group.
    fn proper(offsets: &[i64], cols: &[i64], colours: &[i64], by_rows: bool) {
        for i in 0..offsets.len() - 1 {
            let row = &cols[offsets[i] as usize..offsets[i + 1] as usize];
            for (a, &j) in row.iter().enumerate() {
                for &k in &row[a + 1..] {
                    if !by_rows {
                        assert_ne!(colours[j as usize], colours[k as usize], "columns {j}, {k}");
                    }
                }
            }
        }
        if by_rows {
            for i in 0..offsets.len() - 1 {
                for r in i + 1..offsets.len() - 1 {
                    let a = &cols[offsets[i] as usize..offsets[i + 1] as usize];
                    let b = &cols[offsets[r] as usize..offsets[r + 1] as usize];
                    if a.iter().any(|c| b.contains(c)) {
                        assert_ne!(colours[i], colours[r], "rows {i}, {r}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_tridiagonal_pattern_needs_three_colours_either_way() {
        let n = 10i64;
        let rows: Vec<Vec<i64>> = (0..n)
            .map(|i| ((i - 1).max(0)..=(i + 1).min(n - 1)).collect())
            .collect();
        let rows: Vec<&[i64]> = rows.iter().map(|r| &r[..]).collect();
        let (offsets, cols) = csr(&rows);
        for by_rows in [false, true] {
            let colours = colour(&offsets, &cols, n, by_rows, 0).expect("well formed");
            proper(&offsets, &cols, &colours, by_rows);
            assert_eq!(
                colours.iter().max(),
                Some(&2),
                "by_rows {by_rows}: {colours:?}"
            );
        }
        assert_eq!(rows_of(&offsets)[..5], [0, 0, 1, 1, 1]);
    }

    #[test]
    fn a_dense_row_needs_every_column_colour_and_one_row_colour() {
        let (offsets, cols) = csr(&[&[0, 1, 2, 3], &[0, 2]]);
        assert_eq!(colour(&offsets, &cols, 4, false, 0), Ok(vec![0, 1, 2, 3]));
        assert_eq!(colour(&offsets, &cols, 4, true, 0), Ok(vec![0, 1]));
        // A malformed pattern is an error, not a panic.
        assert!(colour(&[0, 3], &[0, 1], 2, false, 0).is_err());
        assert!(colour(&[0, 1], &[5], 2, false, 0).is_err());
    }

    /// With a limit, the colouring stops at the first item needing that colour: a
    /// column in every row makes every row need its own colour, and `sparse_jacobian`
    /// asks for the rows' colouring only up to the columns' count.
    #[test]
    fn a_limit_stops_the_colouring_at_the_first_item_that_reaches_it() {
        let rows: Vec<Vec<i64>> = (0..6).map(|i| vec![0, i + 1]).collect();
        let rows: Vec<&[i64]> = rows.iter().map(|r| &r[..]).collect();
        let (offsets, cols) = csr(&rows);
        let full = colour(&offsets, &cols, 7, true, 0).expect("well formed");
        assert_eq!(full, vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(
            colour(&offsets, &cols, 7, true, 2),
            Ok(vec![0, 1, 2, -1, -1, -1])
        );
        // A limit the colouring never reaches changes nothing.
        assert_eq!(colour(&offsets, &cols, 7, true, 6), Ok(full));
        // The columns: column 0 against all, the others one colour.
        assert_eq!(
            colour(&offsets, &cols, 7, false, 0),
            Ok(vec![0, 1, 1, 1, 1, 1, 1])
        );
    }
}
