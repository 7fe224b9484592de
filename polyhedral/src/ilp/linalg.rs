//! Exact integer linear algebra on the small matrices of schedule rows.

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Reduced row echelon form by fraction-free elimination; returns the pivot columns and
/// the reduced rows (each row divided by the gcd of its entries).
fn echelon(rows: &[Vec<i64>], n: usize) -> (Vec<usize>, Vec<Vec<i128>>) {
    let mut m: Vec<Vec<i128>> = rows
        .iter()
        .map(|r| r.iter().map(|&x| x as i128).collect())
        .collect();
    let mut pivots = Vec::new();
    let mut r = 0;
    for col in 0..n {
        let Some(p) = (r..m.len()).find(|&i| m[i][col] != 0) else {
            continue;
        };
        m.swap(r, p);
        for i in 0..m.len() {
            if i != r && m[i][col] != 0 {
                let (a, b) = (m[r][col], m[i][col]);
                let pivot_row = m[r].clone();
                for (x, p) in m[i].iter_mut().zip(&pivot_row) {
                    *x = *x * a - p * b;
                }
                let g = m[i].iter().fold(0, |g, &x| gcd(g, x));
                if g > 1 {
                    m[i].iter_mut().for_each(|x| *x /= g);
                }
            }
        }
        pivots.push(col);
        r += 1;
        if r == m.len() {
            break;
        }
    }
    m.truncate(r);
    (pivots, m)
}

/// The rank of `rows` (each of length `n`).
pub fn rank(rows: &[Vec<i64>], n: usize) -> usize {
    echelon(rows, n).0.len()
}

/// An integer basis of the vectors orthogonal to every row of `rows` (the null space),
/// each vector primitive (gcd 1).
pub fn null_space(rows: &[Vec<i64>], n: usize) -> Vec<Vec<i64>> {
    let (pivots, m) = echelon(rows, n);
    let mut out = Vec::new();
    for free in (0..n).filter(|c| !pivots.contains(c)) {
        // x_free = L (common multiple of pivots), x_pivot = -m[r][free]·L / m[r][pivot].
        let l = pivots.iter().enumerate().fold(1i128, |l, (r, &p)| {
            let a = m[r][p].abs();
            l / gcd(l, a) * a
        });
        let mut v = vec![0i128; n];
        v[free] = l;
        for (r, &p) in pivots.iter().enumerate() {
            v[p] = -m[r][free] * l / m[r][p];
        }
        let g = v.iter().fold(0, |g, &x| gcd(g, x));
        out.push(v.iter().map(|&x| (x / g.max(1)) as i64).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_spaces() {
        assert_eq!(null_space(&[vec![1, 0]], 2), vec![vec![0, 1]]);
        assert_eq!(null_space(&[vec![1, 1]], 2), vec![vec![-1, 1]]);
        assert_eq!(null_space(&[], 2), vec![vec![1, 0], vec![0, 1]]);
        assert_eq!(
            null_space(&[vec![1, 0], vec![1, 1]], 2),
            Vec::<Vec<i64>>::new()
        );
        assert_eq!(
            null_space(&[vec![2, 1, 0]], 3),
            vec![vec![-1, 2, 0], vec![0, 0, 1]]
        );
        assert_eq!(rank(&[vec![1, 1], vec![2, 2]], 2), 1);
    }
}
