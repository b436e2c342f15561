# Expected individual risks of sdcMicro's indivRisk (Templ, Kowarik and Meindl; the estimator of
# Benedetti & Franconi), approx and exact, on the fk and Fk that sdcMicro's own freqCalc gives for the
# tables of ../../fixtures/sdcmicro_alpha/freqcalc_alpha.csv at alpha = 0, 0.3, 0.5 and 1 (records with
# missing key values, fractional fk below alpha 1).
#
# Run from this folder:  Rscript make_reference.R [path/to/indivRisk.R]
# Uses the installed sdcMicro package, or, when it is not installed (it is not packaged for Debian), the
# indivRisk.R source file of sdcMicro's repository given as argument (plain R, no compiled code).
args <- commandArgs(trailingOnly = TRUE)
if (requireNamespace("sdcMicro", quietly = TRUE)) {
  indivRisk <- sdcMicro::indivRisk
} else {
  source(args[1])
}
all <- read.csv("../../fixtures/sdcmicro_alpha/freqcalc_alpha.csv", check.names = FALSE)
out <- all[, c("table", "n_qis")]
for (a in c(0, 0.3, 0.5, 1)) {
  for (t in unique(all$table)) {
    rows <- which(all$table == t)
    x <- list(freqCalc = all[rows, c("k0", "w")], keyVars = "k0",
              fk = all[rows, sprintf("fk_%g", a)], Fk = all[rows, sprintf("Fk_%g", a)])
    for (m in c("approx", "exact")) {
      out[rows, sprintf("rk_%s_%g", m, a)] <- suppressWarnings(indivRisk(x, method = m)$rk)
    }
  }
}
write.csv(out, "indivrisk_alpha.csv", row.names = FALSE, na = "")
