"""The terms of disclosure control in plain words, for the dashboard's glossary and the report.

Kept here, not in a page, so every surface that explains a number (the sidebar glossary on every page, the
report for data stewards) uses the same sentences. Each entry says what the term means for the people in
the file, then where it comes from (author and year), never how kanon computes it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    """One glossary entry: the term as shown, its explanation in plain words, and its source."""

    key: str
    term: str
    text: str
    source: str = ""

    def markdown(self) -> str:
        src = f" *({self.source})*" if self.source else ""
        return f"**{self.term}**: {self.text}{src}"


GLOSSARY: tuple[Term, ...] = (
    Term("qi", "Quasi-identifier",
         "a variable that is not a name or number but that someone may know about a person from elsewhere "
         "(age, sex, region, occupation...). Combined, a few of them can single a person out."),
    Term("k", "k (k-anonymity)",
         "the smallest group size wanted: every released record should share its quasi-identifier values with "
         "at least k - 1 other records, so nobody can be told apart from k - 1 others. k = 3 means groups of "
         "at least three.",
         "Samarati & Sweeney 1998; Sweeney 2002"),
    Term("fk", "fk and Fk",
         "fk is the number of records in the file that share a record's quasi-identifier values (its group "
         "size in the sample); a record with fk = 1 is a sample unique. Fk is the same count weighted by the "
         "sampling weights: an estimate of how many people in the population share those values.",
         "as in sdcMicro, Templ et al."),
    Term("violation", "k-violation",
         "a record whose group is smaller than k (fk < k). These are the records the treatment must protect."),
    Term("minuc", "MINUC",
         "a minimal unsafe combination: a smallest set of a record's values (say, age 17 and occupation "
         "'farmer') that already puts it in a group smaller than k. Removing any one value of it makes the "
         "set safe, so a MINUC points at exactly what to recode or suppress.",
         "Wilson et al., RTI"),
    Term("suda", "SUDA",
         "Special Uniques Detection Algorithm: scores each record by how many small combinations of its values "
         "are unique and how small they are. A record unique on two values is riskier than one unique only on "
         "six. DIS-SUDA turns the score into an estimated chance of a correct match.",
         "Elliot et al. 2002"),
    Term("individual_risk", "Individual risk",
         "the estimated probability that an intruder who finds a record's quasi-identifier values in the "
         "population picks the right person, taking the sampling weights into account (about 1 / Fk for a "
         "sample unique).",
         "Benedetti & Franconi 1998"),
    Term("wildcard", "Missing values: wildcard vs category",
         "wildcard (the default, as sdcMicro): a missing or suppressed value could be anything, so the record "
         "matches every record that agrees on its other values; suppressing a value makes a record blend in. "
         "category: missing is a value of its own, so records match only records missing the same variables."),
    Term("suppression", "Local suppression",
         "blanking single values of single records (not whole variables) until every record is in a group of "
         "at least k. Fewer blanked cells means more of the data kept.",
         "Sweeney 2002"),
    Term("generalization", "Generalization (recoding)",
         "making values coarser for everyone: ages into 5-year bands, regions into larger areas, rare "
         "categories merged. A hierarchy lists the levels from the original values to a single '*'."),
    Term("prec", "Prec",
         "the precision left after generalization: 1 when every value is kept at its original detail, 0 when "
         "every value is recoded to its top level ('*'). It is one minus the average, over the observed values "
         "of the quasi-identifiers, of the level used divided by the number of levels (a suppressed value "
         "counts as the top level).",
         "Sweeney 2002"),
    Term("deff", "Design effect",
         "how much the survey's design (strata, clusters, unequal weights) widens confidence intervals compared "
         "with a simple random sample of the same size. 2 means the variance is twice as large, as if the "
         "sample were half its size.",
         "Kish 1965"),
    Term("ci", "95 % confidence interval",
         "the range that would contain the true population value in 95 of 100 repetitions of the survey. "
         "kanon compares these before and after treatment: large shifts mean the release changes conclusions.",
         "Wilson et al., RTI"),
    Term("l_diversity", "l-diversity",
         "a rule on a sensitive variable (an illness, an income band): every group of records sharing "
         "quasi-identifier values must hold at least l well-represented different sensitive values, so that "
         "finding a person's group does not reveal their sensitive value.",
         "Machanavajjhala et al. 2007"),
    Term("t_closeness", "t-closeness",
         "a stricter rule on a sensitive variable: in every group, the distribution of the sensitive values must "
         "be within a distance t of its distribution in the whole file, so a group teaches an intruder little.",
         "Li et al. 2007"),
    Term("direct_identifier", "Direct identifier",
         "a variable that identifies a person on its own (a name, an address, a record or household number, "
         "free text). It is excluded from every release."),
    Term("weight", "Sampling weight",
         "the number of people in the population that a record stands for. Weights turn sample counts (fk) into "
         "population estimates (Fk) and are needed for correct percentages."),
    Term("recipe", "Recipe",
         "the list of steps from the file as loaded to a version (roles, recodes, suppression...). It replays on "
         "the same file, proving each step, or on the next wave of a survey (kanon apply)."),
)

TERMS: dict[str, Term] = {t.key: t for t in GLOSSARY}


def glossary_markdown(keys: tuple[str, ...] | None = None) -> str:
    """The glossary (or the given entries, in glossary order) as Markdown, one entry per paragraph."""
    chosen = GLOSSARY if keys is None else tuple(t for t in GLOSSARY if t.key in set(keys))
    return "\n\n".join(t.markdown() for t in chosen)
