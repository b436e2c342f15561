"""Write ``demo.recipe.json``, the demo recipe for the ELS-like sample, from the steps defined below.

The steps are the source of truth: the script loads ``els_like.csv`` as the dashboard does (the sample's
preset roles), applies them one by one and saves the recipe of the result, so the file records the
fingerprint of the input and of every step's output (``kanon apply`` checks them when it replays the
recipe on this file). Run it again whenever loading or a step changes what the versions hold:
``python sample_data/make_demo_recipe.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from kanon_app.samples import SAMPLES  # noqa: E402
from kanon_core.history import History  # noqa: E402
from kanon_core.io import load_dataset  # noqa: E402
from kanon_core.recipe import Recipe  # noqa: E402
from kanon_core.steps import SetRoles, Step  # noqa: E402
from kanon_core.treat.recode import RecodeStep  # noqa: E402
from kanon_core.treat.suppress import SuppressStep  # noqa: E402

QIS = ("BYSEX", "BYRACE", "BYDOB_P", "BYREGION", "BYGPARED", "BYINCOME", "BYOCCUM", "BYOCCUF")
K = 3
# each group of codes becomes its first code
OCCUPATION_GROUPS = ((1, 5), (2, 8, 13, 14, 16), (3, 4, 6, 9, 17), (7, 12), (10, 11, 15))
INCOME_GROUPS = ((1, 2, 3, 4, 5, 6, 7), (8, 9), (10, 11), (12, 13))
GRANDPARENTS_GROUPS = ((1, 2), (3, 4, 5), (6, 7, 8))
RACE_GROUPS = (((4, 5), 4), ((1, 6), 6))  # the two Hispanic categories; American Indian with more than one race

NOTES = (
    "Demo release of the ELS-like student survey (synthetic). Disclosure scenario: an intruder who knows a "
    "student personally (a neighbour, a relative) knows the student's sex, race/ethnicity, year of birth and "
    "the region of the school, and roughly the family background: family income, each parent's occupation "
    "and the grandparents' education. These 8 variables are the quasi-identifiers; test scores, the survey "
    "design and the other background variables are not assumed known. Steps: occupations coarsened from 17 "
    "to 5 groups (not in paid work; clerical, sales and service; manual and technical; managers and owners; "
    "professionals and teachers); family income from 13 to 4 bands ($25,000 or less; $25,001-$50,000; "
    "$50,001-$100,000; more than $100,000); grandparents' education from 8 to 3 levels; year of birth top- "
    "and bottom-coded to 1985 or earlier, 1986, 1987 or later; the smallest race groups merged (the two "
    "Hispanic categories; American Indian with more than one race). Then local suppression to k = 3 (strict "
    "model, exact method) on the 8 quasi-identifiers, with sex (cost 4) and race (cost 2) kept where possible and the region "
    "never suppressed: the school and stratum codes the survey design needs give it away (each school lies in "
    "one region). The student ID is a direct identifier and is not released."
)


def demo_steps() -> list[Step]:
    """The demo's treatment, in the order an officer would apply it on the dashboard."""
    roles = SAMPLES["els"].roles
    steps: list[Step] = [SetRoles(qis=QIS, weight=roles.weight, strata=roles.strata, psu=roles.psu,
                                  outcomes=roles.outcomes, direct_ids=roles.direct_ids)]
    for column in ("BYOCCUM", "BYOCCUF"):
        steps += [RecodeStep(column, merge=g, into=g[0]) for g in OCCUPATION_GROUPS]
    steps += [RecodeStep("BYINCOME", merge=g, into=g[0]) for g in INCOME_GROUPS]
    steps += [RecodeStep("BYGPARED", merge=g, into=g[0]) for g in GRANDPARENTS_GROUPS]
    steps.append(RecodeStep("BYDOB_P", top=1987, bottom=1985))
    steps += [RecodeStep("BYRACE", merge=g, into=into) for g, into in RACE_GROUPS]
    # the region is released anyway through the school and stratum codes the survey design needs (each school
    # lies in one region): a suppressed region would be read off them, so it is protected, never suppressed
    steps.append(SuppressStep(qis=QIS, k=K, importance=(("BYSEX", 4.0), ("BYRACE", 2.0)), protected=("BYREGION",)))
    return steps


def build() -> Recipe:
    sample = SAMPLES["els"]
    history = History.start(load_dataset(sample.path, roles=sample.roles))
    for step in demo_steps():
        history.apply(step)
    return Recipe.from_history(history, input_path=sample.path.name, notes=NOTES, extra={"k": K})


if __name__ == "__main__":
    out = HERE / "demo.recipe.json"
    build().save(out)
    print(f"wrote {out.name}")
