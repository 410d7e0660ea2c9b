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
/// `cols`) with `n` columns; an error for a malformed pattern.
pub(crate) fn colour(
    offsets: &[i64],
    cols: &[i64],
    n: i64,
    by_rows: bool,
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
        for t in offsets[i] as usize..offsets[i + 1] as usize {
            let j = cols[t] as usize;
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
    }
    Ok(colours)
}
