"""Compare: what a treatment did to the statistics — weighted percentages with design-based CIs, Wilson's
three regression models, bias and information loss — for any two versions."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from kanon_app import big_file, compare_ui, hierarchy_ui, prefetch, state
from kanon_app.navigation import ensure_app_navigation
from kanon_app.sections import lazy_tabs
from kanon_core.errors import KanonError
from kanon_core.fmt import markdown_literal, readable_table
from kanon_core.utility import compare_distributions
from kanon_core.utility.baseline import original_with_roles
from kanon_core.utility.bias import bias_of_correlations, bias_of_means, entropy_table, suppressed_cells
from kanon_core.utility.info_loss import (
    WHY_NO_LOSS_METRIC,
    WHY_NO_PREC,
    hierarchies_fingerprint,
    information_loss,
    version_hierarchies,
    version_levels,
)
from kanon_core.utility.model_builder import (
    FAMILIES,
    build_formula,
    covariate_candidates,
    default_model,
    measurement_variables,
    outcome_candidates,
)
from kanon_core.utility.plots import (
    bias_figure,
    coefficient_figure,
)

ensure_app_navigation()

st.title("Compare")
st.caption(
    "Weighted percentages of every category among the records where the variable is not missing (so "
    "suppressed cells leave the denominator, as in Wilson et al., RTI), with 95 % confidence intervals by Taylor "
    "linearization for the design given by the weight, strata and PSU roles. Intervals that still overlap "
    "after treatment suggest the release supports the same conclusions.")
if big_file.compare_panel():  # a large file opened on the Data page: the file against its release, by the engine
    st.stop()
state.keep_widget_values()  # the choices of the page left, for when it is opened again
state.show_flash()
hist = state.history()
ids = sorted(hist.versions)


BASELINE = state.BASELINE  # the original data with the After version's roles: the default "Before", as in the report


def _label(vid: int) -> str:
    if vid == BASELINE:
        return "Original data, with the roles of the After version"
    return f"v{vid}: {hist.versions[vid].label}"


c1, c2 = st.columns(2)
state.widget_value("w_cmp_before", BASELINE)
if "w_cmp_after" not in st.session_state or st.session_state["w_cmp_after"] not in ids:
    st.session_state["w_cmp_after"] = hist.current_id
before_id = c1.selectbox("Before", [BASELINE, *ids], format_func=_label, key="w_cmp_before",
                         help="By default the original data with the roles (weight, strata, PSUs, QIs) of the "
                              "After version, so the comparison uses the design of the release, as the report does.")
after_id = c2.selectbox("After", ids, format_func=_label, key="w_cmp_after")
after_version = hist.versions[after_id]  # the version every result of this page is kept under
after = after_version.dataset
before = (state.memo("compare_baseline", None, lambda: original_with_roles(hist, after_id),
                     version=after_version)
          if before_id == BASELINE else hist.versions[before_id].dataset)
if before_id == after_id:
    st.info("Choose two different versions (by default the original and the current one).")
    st.stop()
common = [c for c in before.columns if c in after.frame.columns]
state.widget_value("w_cmp_vars", [q for q in after.roles.qis if q in common])
variables = st.multiselect("Variables", common, key="w_cmp_vars")
design_text = ", ".join(f"{r} {getattr(before.roles, r)}" for r in ("weight", "strata", "psu", "fpc")
                        if getattr(before.roles, r)) or "none (unweighted, simple random sample)"
st.caption(f"Design (roles of the Before data): {design_text}. Change roles on the Data page.")

# the tabs' bodies below; kanon_app.sections.lazy_tabs (at the end) runs only the open one (information loss
# alone takes seconds), and a tab switch reruns only the tabs


def _memo(name: str, params, compute):
    return state.memo(name, (before_id, after_id, params), compute, version=after_version)


def _tab_pct() -> None:
    state.widget_value("w_cmp_ci", "wald", options=["wald", "logit"])
    ci = st.radio("Confidence interval", ["wald", "logit"], horizontal=True, key="w_cmp_ci",
                  help="Wald: p ± 1.96·SE (Wilson et al., RTI; R's confint). Logit: the interval of logit(p), back-"
                       "transformed; stays inside 0–100 % for rare categories.")
    if not variables:
        st.info("Choose at least one variable.")
    else:
        try:
            prefetch.wait_for(prefetch.COMPARE, (before_id, after_id, (tuple(variables), ci)), after_id)
            comp = _memo(prefetch.COMPARE, (tuple(variables), ci), lambda: compare_distributions(
                before, after, variables, ci=ci))
        except KanonError as exc:
            st.error(str(exc))
            comp = None
        if comp is not None:
            compare_ui.show_comparison(comp, variables, f"percentages_v{before_id}_v{after_id}.csv")


def _tab_reg() -> None:
    st.caption("Wilson et al. (RTI), table 4: the model on the original data; on the treated data with records whose "
               "covariates were suppressed left out; and with suppressed values as a category of their own. "
               "Linear for a numeric outcome, logistic for a binary one; design-based (sandwich) standard "
               "errors and a joint Wald test per covariate.")
    formula_key = f"w_cmp_formula_{after_id}"
    # a model of this file's own variables, never a foreign example (both read every column: once per version)
    spec = state.memo("cmp_default_model", tuple(variables), lambda: default_model(after, variables),
                      version=after_version)
    keys = {"outcome": f"w_cmp_outcome_{after_id}", "covariates": f"w_cmp_covariates_{after_id}",
            "categorical": f"w_cmp_categorical_{after_id}"}
    state.widget_value(formula_key, spec.formula if spec else "")
    state.widget_value(keys["outcome"], spec.outcome if spec else None)
    state.widget_value(keys["covariates"], list(spec.covariates) if spec else [])
    state.widget_value(keys["categorical"], list(spec.categorical) if spec else [])

    def _write_formula() -> None:
        """The builder's choices written into the formula field (which stays editable)."""
        ss = st.session_state
        if ss.get(keys["outcome"]):
            covs = [c for c in ss.get(keys["covariates"], []) if c != ss[keys["outcome"]]]
            ss[formula_key] = build_formula(ss[keys["outcome"]], covs, ss.get(keys["categorical"], []))

    outcomes = state.memo("cmp_outcomes", None, lambda: outcome_candidates(after), version=after_version)
    b1, b2, b3 = st.columns([2, 4, 3])
    outcome = b1.selectbox("Outcome", outcomes, key=keys["outcome"], on_change=_write_formula,
                           help="Numeric (linear model) or with two values (logistic).")
    cov_options = covariate_candidates(after, outcome or "")
    st.session_state[keys["covariates"]] = [c for c in st.session_state[keys["covariates"]] if c in cov_options]
    covariates = b2.multiselect("Covariates", cov_options, key=keys["covariates"], on_change=_write_formula)
    st.session_state[keys["categorical"]] = [c for c in st.session_state[keys["categorical"]] if c in covariates]
    b3.multiselect("Covariates as categories (C(x))", covariates, key=keys["categorical"],
                   on_change=_write_formula)
    formula = st.text_input("Model (outcome ~ covariates; C(x) makes x categorical): built from the choices "
                            "above, or type your own", key=formula_key)
    r1, r2 = st.columns(2)
    state.widget_value("w_cmp_family", list(FAMILIES)[0], options=list(FAMILIES))
    state.widget_value("w_cmp_alpha", 0.05)
    family = r1.radio("Family", list(FAMILIES), horizontal=True, key="w_cmp_family",
                      help="auto: logistic for an outcome with two values, else linear.")
    alpha = float(r2.number_input("Significance level", min_value=0.001, max_value=0.5, step=0.01,
                                  key="w_cmp_alpha"))
    params = (formula.strip(), family, alpha)
    models = state.memo_peek("compare_models", (before_id, after_id, params), version=after_version)
    if not formula.strip():
        st.info("Choose an outcome and covariates above" + (f", e.g. {spec.formula}." if spec else
                "; this file has no numeric or two-valued variable to model."))
    elif models is None:
        slot = st.empty()  # the button, cleared once the models are fitted: they are drawn in this same run
        if slot.button("Fit the three models", key="btn_cmp_fit", type="primary"):
            try:
                # here: scipy.stats takes seconds to load unless the launcher (kanon_app.serve) loaded it
                from kanon_core.utility import compare_models

                with st.spinner("Fitting"):
                    models = compare_models(before, after, formula, family=family, alpha=alpha)
            except KanonError as exc:
                st.error(str(exc))
            else:
                state.memo_put("compare_models", (before_id, after_id, params), models,
                               version=after_version)
                slot.empty()
    if models is not None and formula.strip():
        from kanon_core.utility.model_compare import summary_in_words

        sig = models.significance_table().drop(columns=["model"])
        sig["summary"] = sig["summary"].map(summary_in_words)  # "None" is not read as a missing value
        st.dataframe(readable_table(sig), hide_index=True, width="stretch")
        notes = models.model_notes()  # a model not fitted, a moved reference, a recoded number, separation
        if notes:
            st.info("\n".join(f"- {markdown_literal(n)}" for n in notes))
        pvalues = models.pvalue_table()
        st.dataframe(readable_table(pvalues, why={c: "not estimable (aliased or not in this model)"
                                                  for c in pvalues.columns}),
                     hide_index=True, width="stretch")
        st.plotly_chart(coefficient_figure(models.coefficients_long()), width="stretch", key="chart_cmp_coef")
        flagged = models.coefficient_notes()
        if len(flagged):
            st.warning("Some coefficients must not be read as they stand: see the note next to each (a category "
                       "whose records all have the same outcome has an infinite estimate; the number shown is "
                       "where the fit stopped).")
            st.dataframe(readable_table(flagged.drop(columns=["model"])), hide_index=True, width="stretch")

def _tab_loss() -> None:
    loss_qis = [q for q in before.roles.qis if q in after.frame.columns]
    hs = None  # the hierarchies the loss measures read, also the entropy's (a label stands for its group)
    if loss_qis:
        try:
            # the session's hierarchies enter the keys by content: one saved on Recode refreshes this tab
            session_key = hierarchies_fingerprint(state.hierarchies())
            session_hs, _ = state.memo("hierarchies", (tuple(loss_qis), "compare", before_id, session_key),
                                       lambda: hierarchy_ui.effective_hierarchies(before, loss_qis),
                                       version=after_version)
            hs = version_hierarchies(hist, after_id, session_hs)
            loss = _memo("info_loss", (tuple(loss_qis), hierarchies_fingerprint(hs)),
                         lambda: information_loss(before, after, loss_qis, hs,
                                                  levels=version_levels(hist, after_id)))
        except KanonError as exc:
            st.error(str(exc))
        else:
            st.markdown("**Information loss on the quasi-identifiers** — Prec (Sweeney 2002; over the cells "
                        "observed in the original and not declared missing by a step, with the hierarchy each "
                        "generalization step used, else the "
                        "Recode page's), the loss metric LM (Iyengar; share of a variable's values a released "
                        "value stands for, suppressed = 1) and discernibility (sum of squared class sizes, each "
                        "suppressed record charged the number of records, as on the Recode page).")
            c1, c2 = st.columns([2, 3])
            c1.dataframe(readable_table(loss.summary(), digits=4, why={
                "treated": "a variable was recoded without a hierarchy", "original": "no hierarchy"}),
                hide_index=True, width="stretch")
            c2.dataframe(readable_table(loss.table, digits=4, why={"prec": WHY_NO_PREC,
                                                                   "loss_metric": WHY_NO_LOSS_METRIC}),
                         hide_index=True, width="stretch")
    if variables:
        try:
            cells = _memo("suppressed_cells", tuple(variables), lambda: suppressed_cells(before, after, variables))
            ent = _memo("entropy", (tuple(variables), hierarchies_fingerprint(hs or {})),
                        lambda: entropy_table(before, after, variables, hierarchies=hs,
                                              levels=version_levels(hist, after_id)))
        except KanonError as exc:
            st.error(str(exc))
        else:
            st.markdown(f"**Suppressed cells: {int(cells['n_suppressed'].sum()):,}**")
            st.dataframe(readable_table(cells), hide_index=True, width="stretch")
            st.markdown("**Entropy (information per variable) and non-uniform entropy (the loss)**")
            st.dataframe(readable_table(ent, digits=4), hide_index=True, width="stretch")
    numeric = [c for c in common if pd.api.types.is_numeric_dtype(before.frame[c])
               and c not in (before.roles.weight, before.roles.strata, before.roles.psu)
               and c not in before.roles.direct_ids]
    # the analysis variables (income, expenditure, age, scores) first: a mean of QI codes means nothing
    state.widget_value("w_cmp_bias_vars", [c for c in measurement_variables(before) if c in numeric][:6])
    bias_vars = st.multiselect("Numeric variables for bias of means and correlations (Angiuli & Waldo; a "
                               "generalized value counts as the mean of its bin)", numeric, key="w_cmp_bias_vars")
    if bias_vars:
        try:
            means = _memo("bias_means", tuple(bias_vars), lambda: bias_of_means(before, after, bias_vars))
            corr = (_memo("bias_corr", tuple(bias_vars), lambda: bias_of_correlations(before, after, bias_vars))
                    if len(bias_vars) > 1 else None)
        except KanonError as exc:
            st.error(str(exc))
        else:
            st.dataframe(readable_table(means, digits=4), hide_index=True, width="stretch")
            if corr is not None:
                st.dataframe(readable_table(corr, digits=4), hide_index=True, width="stretch")
            st.plotly_chart(bias_figure(means, corr), width="stretch", key="chart_cmp_bias")


lazy_tabs(["Weighted percentages", "Regression", "Bias and information loss"], "w_cmp_tab",
          [_tab_pct, _tab_reg, _tab_loss])
