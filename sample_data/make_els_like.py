"""Generate the synthetic ELS-like student survey bundled with kanon (seeded, reproducible).

Modelled on the public-use file of the Education Longitudinal Study of 2002 as used by Wilson (RTI),
"k-anonymization may be NP-hard, but can it be practical?": 16,197 students, the 19 quasi-identifiers
of that paper's Table 1 with the same numbers of categories and meaningful value labels, 11,204 records
complete on all 19 and 4,993 with at least one missing value, a skewed positive analysis weight
(F2BYWT-like), stratum and school (PSU) identifiers, and three standardized test scores generated from
the covariates of the paper's Table 4 so that its regressions find most of them significant.

No real person is in this file. Dependence is built in where it is in the real data: school-level
variables (control, urbanicity, region) are constant within a school; race drives parent's race and
home language; language drives English fluency; a socio-economic latent drives parents' education,
occupations and income; parents' highest education is the maximum of mother's and father's.

Run ``python sample_data/make_els_like.py`` to rewrite ``els_like.csv`` (codes, missing as empty),
and ``els_like.labels.json`` (variable and value labels, read by kanon next to the CSV).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

SEED = 20021
N_STUDENTS = 16_197
N_COMPLETE = 11_204

RACE = {1: "Amer. Indian/Alaska Native, non-Hispanic", 2: "Asian, Hawaii/Pac. Islander, non-Hispanic",
        3: "Black or African American, non-Hispanic", 4: "Hispanic, no race specified",
        5: "Hispanic, race specified", 6: "More than one race, non-Hispanic", 7: "White, non-Hispanic"}
LANGUAGE = {1: "English", 2: "Spanish", 3: "An Asian language", 4: "A European language (not Spanish)",
            5: "Other language", 6: "English and another language equally"}
FLUENCY = {1: "Native English speaker", 2: "Very fluent", 3: "Fluent", 4: "Not fluent",
           5: "Non-native English speaker, fluency unknown"}
FAMILY = {1: "Mother and father", 2: "Mother and male guardian", 3: "Father and female guardian",
          4: "Two guardians", 5: "Mother only", 6: "Father only", 7: "Female guardian only",
          8: "Male guardian only", 9: "Lives with student less than half time"}
EDUCATION = {1: "Did not finish high school", 2: "Graduated from high school or GED",
             3: "Attended 2-year school, no degree", 4: "Graduated from 2-year school",
             5: "Attended college, no 4-year degree", 6: "Graduated from college",
             7: "Completed Master's degree or equivalent", 8: "Completed PhD, MD, other advanced degree"}
OCCUPATION = {1: "No job for pay", 2: "Clerical", 3: "Craftsperson", 4: "Farmer, farm manager", 5: "Homemaker",
              6: "Laborer", 7: "Manager, administrator", 8: "Military", 9: "Operative", 10: "Professional A",
              11: "Professional B", 12: "Proprietor or owner", 13: "Protective service", 14: "Sales",
              15: "School teacher", 16: "Service", 17: "Technical"}
INCOME = {1: "None", 2: "$1,000 or less", 3: "$1,001-$5,000", 4: "$5,001-$10,000", 5: "$10,001-$15,000",
          6: "$15,001-$20,000", 7: "$20,001-$25,000", 8: "$25,001-$35,000", 9: "$35,001-$50,000",
          10: "$50,001-$75,000", 11: "$75,001-$100,000", 12: "$100,001-$200,000", 13: "$200,001 or more"}
CONTROL = {1: "Public", 2: "Catholic", 3: "Other private"}
URBAN = {1: "Urban", 2: "Suburban", 3: "Rural"}
REGION = {1: "Northeast", 2: "Midwest", 3: "South", 4: "West"}
BIRTH = {1983: "1983", 1984: "1984", 1985: "1985", 1986: "1986", 1987: "1987", 1988: "1988"}
SEX = {1: "Male", 2: "Female"}

VARIABLES = {
    "STU_ID": ("Student ID (synthetic)", None),
    "BYSEX": ("Sex-composite", SEX),
    "BYRACE": ("Student's race/ethnicity-composite", RACE),
    "BYHOMLNG": ("Student's native language-composite", LANGUAGE),
    "BYSTLNG2": ("Sample member's English fluency", FLUENCY),
    "BYPARACE": ("Parent's race/ethnicity-composite", RACE),
    "BYPARLNG": ("Parent's native language-composite", LANGUAGE),
    "BYPLANG": ("Parent's English fluency", FLUENCY),
    "BYFCOMP": ("Family composition", FAMILY),
    "BYPARED": ("Parents' highest level of education", EDUCATION),
    "BYMOTHED": ("Mother's highest level of education-composite", EDUCATION),
    "BYFATHED": ("Father's highest level of education-composite", EDUCATION),
    "BYGPARED": ("Highest reported level of education among parents' parents", EDUCATION),
    "BYOCCUM": ("Mother/female guardian's occupation-composite", OCCUPATION),
    "BYOCCUF": ("Father/male guardian's occupation-composite", OCCUPATION),
    "BYINCOME": ("Total family income from all sources 2001-composite", INCOME),
    "BYSCTRL": ("School control", CONTROL),
    "BYURBAN": ("School urbanicity", URBAN),
    "BYREGION": ("Geographic region of school", REGION),
    "BYDOB_P": ("Student's year of birth", BIRTH),
    "STRAT_ID": ("Sampling stratum", None),
    "SCH_ID": ("School (primary sampling unit)", None),
    "F2BYWT": ("Cross-sectional analysis weight (synthetic)", None),
    "BYTXCSTD": ("Standardized test composite score-math/reading", None),
    "BYTXMSTD": ("Math test standardized score", None),
    "BYTXRSTD": ("Reading test standardized score", None),
}
QUASI_IDENTIFIERS = [v for v, (_, labels) in VARIABLES.items() if labels is not None]


def _pick(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    """One category (1-based) per row of a probability matrix."""
    cum = np.cumsum(probs / probs.sum(axis=1, keepdims=True), axis=1)
    return (rng.random((probs.shape[0], 1)) > cum).sum(axis=1) + 1


def _ordinal(rng: np.random.Generator, latent: np.ndarray, cuts: list[float]) -> np.ndarray:
    return np.searchsorted(np.asarray(cuts), latent + rng.normal(0, 0.8, len(latent))) + 1


def generate(seed: int = SEED) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = N_STUDENTS

    # Schools (PSUs) within strata; school-level variables are constant within a school.
    n_schools = 752
    sch_region = _pick(rng, np.tile([0.18, 0.25, 0.35, 0.22], (n_schools, 1)))
    sch_urban = _pick(rng, np.tile([0.30, 0.48, 0.22], (n_schools, 1)))
    sch_ctrl = _pick(rng, np.tile([0.78, 0.12, 0.10], (n_schools, 1)))
    cell = (sch_ctrl - 1) * 12 + (sch_region - 1) * 3 + (sch_urban - 1)
    order = np.lexsort((rng.random(n_schools), cell))
    stratum = np.empty(n_schools, dtype=int)
    stratum[order] = np.arange(n_schools) // 2 + 1  # two schools per stratum, as in the ELS design
    sch_effect = rng.normal(0, 3.0, n_schools)
    sch_size = rng.gamma(4.0, 1.0, n_schools)
    school = rng.choice(n_schools, size=n, p=sch_size / sch_size.sum())

    region, urban, ctrl = sch_region[school], sch_urban[school], sch_ctrl[school]
    sex = rng.choice([1, 2], size=n, p=[0.5, 0.5])

    race_by_region = np.array([
        [0.005, 0.05, 0.12, 0.04, 0.06, 0.04, 0.685],
        [0.008, 0.03, 0.12, 0.02, 0.04, 0.04, 0.742],
        [0.010, 0.03, 0.25, 0.05, 0.08, 0.04, 0.540],
        [0.015, 0.11, 0.06, 0.10, 0.17, 0.06, 0.485],
    ])
    race = _pick(rng, race_by_region[region - 1])
    parace = np.where(rng.random(n) < 0.9, race, _pick(rng, race_by_region[region - 1]))

    hisp, asian = np.isin(race, [4, 5]), race == 2
    lang_p = np.tile([0.92, 0.02, 0.01, 0.02, 0.02, 0.01], (n, 1))
    lang_p[hisp] = [0.45, 0.45, 0.0, 0.02, 0.02, 0.06]
    lang_p[asian] = [0.40, 0.01, 0.45, 0.02, 0.07, 0.05]
    homlng = _pick(rng, lang_p)
    parlng = np.where(rng.random(n) < 0.85, homlng, _pick(rng, lang_p))

    def fluency(lang: np.ndarray, adult: bool) -> np.ndarray:
        p = np.tile([0.0, 0.55, 0.30, 0.10, 0.05] if not adult else [0.0, 0.35, 0.35, 0.22, 0.08], (len(lang), 1))
        out = _pick(rng, p)
        return np.where(lang == 1, 1, out)

    stlng2, plang = fluency(homlng, False), fluency(parlng, True)

    fcomp = rng.choice(np.arange(1, 10), size=n, p=[0.56, 0.10, 0.03, 0.02, 0.19, 0.04, 0.03, 0.01, 0.02])

    ses = rng.normal(0, 1, n) + 0.35 * (race == 7) + 0.3 * (race == 2) - 0.35 * hisp - 0.25 * (race == 3)
    ses += 0.5 * (ctrl == 3) + 0.25 * (ctrl == 2) + 0.15 * (urban == 2) - 0.2 * np.isin(fcomp, [5, 6, 7, 8])
    ed_cuts = [-1.6, -0.5, -0.2, 0.15, 0.55, 1.25, 2.0]
    mothed = _ordinal(rng, ses, ed_cuts)
    fathed = _ordinal(rng, ses, ed_cuts)
    pared = np.maximum(mothed, fathed)
    gpared = np.clip(_ordinal(rng, ses - 0.6, ed_cuts), 1, 8)

    def occupation(ed: np.ndarray, mother: bool) -> np.ndarray:
        low = [0.05, 0.10, 0.08, 0.01, 0.12 if mother else 0.01, 0.08, 0.05, 0.005, 0.09, 0.02, 0.01,
               0.03, 0.02, 0.06, 0.02, 0.20, 0.04]
        high = [0.02, 0.12, 0.03, 0.01, 0.06 if mother else 0.005, 0.01, 0.18, 0.01, 0.02, 0.16, 0.12,
                0.06, 0.02, 0.07, 0.08, 0.03, 0.06]
        t = ((ed - 1) / 7.0)[:, None]
        return _pick(rng, (1 - t) * np.array(low) + t * np.array(high))

    occum, occuf = occupation(mothed, True), occupation(fathed, False)
    income = np.clip(_ordinal(rng, 1.1 * ses, [-3.2, -2.8, -2.3, -1.7, -1.25, -0.9, -0.55, -0.05, 0.55,
                                                 1.1, 1.7, 2.6]), 1, 13)
    dob = rng.choice([1983, 1984, 1985, 1986, 1987, 1988], size=n, p=[0.004, 0.03, 0.25, 0.70, 0.014, 0.002])

    # Test scores (mean 50, sd 10) from the Table 4 covariates plus a school effect.
    eff_race = np.array([0, -4.0, 4.0, -7.0, -5.0, -5.5, -2.0, 0.0])[race]
    eff_parace = np.array([0, -1.5, 1.5, -2.0, -1.5, -1.5, -1.0, 0.0])[parace]
    eff_stl = np.array([0, 0.0, 1.5, -1.0, -6.0, -3.0])[stlng2]
    eff_plang = np.array([0, 0.0, 0.3, 0.2, -0.3, 0.1])[plang]
    eff_ctrl = np.array([0, 0.0, 2.0, 3.0])[ctrl]
    base = 44.0 + 1.6 * pared + 0.9 * fathed + eff_race + eff_parace + eff_stl + eff_ctrl + sch_effect[school]
    read = base + 1.8 * (sex == 2) + 0.9 * eff_plang + rng.normal(0, 7.5, n)
    math = base - 1.5 * (sex == 2) + 2.0 * eff_plang + rng.normal(0, 7.5, n)
    comp = 0.5 * (read + math) + 0.15 * (sex == 2) + 1.2 * eff_plang + rng.normal(0, 2.0, n)

    def standardize(x: np.ndarray) -> np.ndarray:
        return np.round(50 + 10 * (x - x.mean()) / x.std(), 2)

    weight = np.round(rng.lognormal(mean=5.0, sigma=0.75, size=n) * (1 + 0.5 * (ctrl == 1)), 4)

    frame = pd.DataFrame({
        "STU_ID": np.arange(100001, 100001 + n),
        "BYSEX": sex, "BYRACE": race, "BYHOMLNG": homlng, "BYSTLNG2": stlng2, "BYPARACE": parace,
        "BYPARLNG": parlng, "BYPLANG": plang, "BYFCOMP": fcomp, "BYPARED": pared, "BYMOTHED": mothed,
        "BYFATHED": fathed, "BYGPARED": gpared, "BYOCCUM": occum, "BYOCCUF": occuf, "BYINCOME": income,
        "BYSCTRL": ctrl, "BYURBAN": urban, "BYREGION": region, "BYDOB_P": dob,
        "STRAT_ID": stratum[school], "SCH_ID": school + 1001, "F2BYWT": weight,
        "BYTXCSTD": standardize(comp), "BYTXMSTD": standardize(math), "BYTXRSTD": standardize(read),
    })
    return _add_missing(frame, rng)


def _add_missing(frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """Exactly N_STUDENTS - N_COMPLETE records get at least one missing quasi-identifier.

    Parent-questionnaire items go missing together (parent nonresponse); other items by item nonresponse.
    School-level variables are never missing (they come from the sampling frame).
    """
    frame = frame.copy()
    n = len(frame)
    incomplete = rng.choice(n, size=n - N_COMPLETE, replace=False)
    parent_items = ["BYPARACE", "BYPARLNG", "BYPLANG", "BYGPARED", "BYFCOMP"]
    item_rates = {"BYSEX": 0.01, "BYRACE": 0.03, "BYHOMLNG": 0.05, "BYSTLNG2": 0.08, "BYPARED": 0.08,
                  "BYMOTHED": 0.15, "BYFATHED": 0.22, "BYOCCUM": 0.25, "BYOCCUF": 0.30, "BYINCOME": 0.25,
                  "BYDOB_P": 0.02}
    parent_nonresp = rng.random(len(incomplete)) < 0.35
    masks = {c: np.zeros(n, dtype=bool) for c in QUASI_IDENTIFIERS}
    for c in parent_items:
        masks[c][incomplete[parent_nonresp]] = True
    for c, rate in item_rates.items():
        masks[c][incomplete[rng.random(len(incomplete)) < rate]] = True
    any_missing = np.zeros(n, dtype=bool)
    for m in masks.values():
        any_missing |= m
    # every chosen record must miss something: give the rest one item-nonresponse variable
    need = incomplete[~any_missing[incomplete]]
    cols = list(item_rates)
    probs = np.array(list(item_rates.values()))
    for i, c in zip(need, rng.choice(len(cols), size=len(need), p=probs / probs.sum())):
        masks[cols[c]][i] = True
    for c, m in masks.items():
        frame[c] = frame[c].astype("Int64").mask(m)
    return frame


def labels() -> dict:
    return {
        var: {"label": label, "value_labels": {str(k): v for k, v in (vl or {}).items()}}
        for var, (label, vl) in VARIABLES.items()
    }


def main(out_dir: Path | None = None) -> None:
    out_dir = out_dir or Path(__file__).resolve().parent
    frame = generate()
    assert len(frame) == N_STUDENTS
    assert int(frame[QUASI_IDENTIFIERS].notna().all(axis=1).sum()) == N_COMPLETE
    frame.to_csv(out_dir / "els_like.csv", index=False, lineterminator="\n")
    (out_dir / "els_like.labels.json").write_text(json.dumps(labels(), indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(frame)} records, {N_COMPLETE} complete on the {len(QUASI_IDENTIFIERS)} quasi-identifiers")


if __name__ == "__main__":
    main()
