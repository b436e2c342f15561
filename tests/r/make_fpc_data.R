# Adds finite-population-correction columns to the reference designs (deterministic, no random numbers).
#
# Run from the repository root after make_data.R:  Rscript tests/r/make_fpc_data.R
# Reads tests/fixtures/r_survey/design_a.csv and design_lonely.csv and writes design_fpc.csv and
# design_fpc_lonely.csv with these columns added (R's svydesign(fpc = ~COL) conventions: values > 1 are
# population sizes, values <= 1 sampling fractions; constant within each stratum):
#   N_psu   population number of PSUs per stratum (stratum s3 is a census: N = n = 2, no variance);
#   f_psu   the same design as sampling fractions n_h / N_h (s3: 1);
#   N_rec   population number of records per stratum, for the design with strata and no PSUs;
#   N_clu   population number of PSUs of the cluster design without strata (30);
#   f_all   sampling fraction of the design with weights only (0.3).
# design_fpc_lonely.csv: N_psu with 5 PSUs in the population of the single-PSU stratum s5, and N_psu1
# where s5 is its own population (a census: R neither fails nor averages on it).

data_dir <- "tests/fixtures/r_survey"
add_fpc <- function(d, lonely_n) {
  pop <- c(s1 = 12, s2 = 20, s3 = 2, s4 = 7, s5 = lonely_n)
  n_psu <- tapply(d$psu, d$stratum, function(p) length(unique(p)))
  d$N_psu <- unname(pop[d$stratum])
  d$f_psu <- unname(n_psu[d$stratum] / pop[d$stratum])
  n_rec <- table(d$stratum)
  mult <- c(s1 = 4, s2 = 2.5, s3 = 10, s4 = 1.5, s5 = 3)
  d$N_rec <- unname(ceiling(as.numeric(n_rec[d$stratum]) * mult[d$stratum]))
  d$N_clu <- 30
  d$f_all <- 0.3
  d
}
a <- read.csv(file.path(data_dir, "design_a.csv"), stringsAsFactors = FALSE, na.strings = "")
write.csv(add_fpc(a, NA), file.path(data_dir, "design_fpc.csv"), row.names = FALSE, na = "")
l <- read.csv(file.path(data_dir, "design_lonely.csv"), stringsAsFactors = FALSE, na.strings = "")
l <- add_fpc(l, 5)
l$N_psu1 <- ifelse(l$stratum == "s5", 1, l$N_psu)
write.csv(l, file.path(data_dir, "design_fpc_lonely.csv"), row.names = FALSE, na = "")
