"""The agreement figures of the reference packages (krippendorff, pingouin) for a table of
scores, one row a unit and one column a rater (NaN where a rater gave none)."""

import krippendorff
import numpy as np
import pandas as pd
import pingouin


def reference_alpha(table: np.ndarray) -> float:
    return float(krippendorff.alpha(reliability_data=table.T, level_of_measurement="interval"))


def pingouin_icc(table: np.ndarray) -> pd.DataFrame:
    """pingouin's ICC table, indexed by its `Type` (ICC(A,1), ICC(A,k), ...)."""
    long = pd.DataFrame(
        [(unit, rater, value) for (unit, rater), value in np.ndenumerate(table)],
        columns=["unit", "rater", "score"],
    )
    with np.errstate(all="ignore"):  # pingouin divides by zero on degenerate tables
        found = pingouin.intraclass_corr(
            long, targets="unit", raters="rater", ratings="score", nan_policy="omit"
        )
    return found.set_index("Type")
