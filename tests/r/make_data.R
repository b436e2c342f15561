# Generates the small deterministic survey data sets used as R reference inputs.
#
# Run once from the repository root:  Rscript tests/r/make_data.R
# The CSVs are committed; tests/r/make_reference.R reads them and writes the expected values.
# Re-running this script rewrites the data, so the references must be regenerated afterwards.

set.seed(20240611)
out <- "tests/fixtures/r_survey"

# Design A: 4 strata with 3, 4, 2 and 3 PSUs; PSU ids restart within each stratum (nested).
n_psu <- c(3, 4, 2, 3)
rows <- list()
for (h in seq_along(n_psu)) {
  for (j in seq_len(n_psu[h])) {
    m <- sample(12:26, 1)
    rows[[length(rows) + 1]] <- data.frame(stratum = paste0("s", h), psu = j, m = m)
  }
}
psus <- do.call(rbind, rows)
d <- psus[rep(seq_len(nrow(psus)), psus$m), c("stratum", "psu")]
n <- nrow(d)
d$psu_global <- match(paste(d$stratum, d$psu), unique(paste(d$stratum, d$psu))) + 100
d$w <- round(runif(n, 40, 400), 2)
h <- as.integer(substr(d$stratum, 2, 2))
probs <- rbind(c(.40, .30, .20, .10), c(.25, .25, .25, .25), c(.50, .30, .20, 0), c(.10, .20, .30, .40))
d$x <- vapply(h, function(k) sample(c("a", "b", "c", "d"), 1, prob = probs[k, ]), "")
d$x[runif(n) < 0.12] <- NA
# One PSU of stratum s3 has x missing throughout: within the domain that stratum keeps one PSU.
d$x[d$stratum == "s3" & d$psu == 2] <- NA
d$a <- sample(1:3, n, replace = TRUE, prob = c(.5, .3, .2))
d$a[runif(n) < 0.08] <- NA
d$b <- round(rnorm(n, 50, 10), 1)
d$b[runif(n) < 0.06] <- NA
d$c <- sample(c("north", "south", "east"), n, replace = TRUE)
eff_a <- c(0, 1.5, -2)[d$a]
eff_a[is.na(eff_a)] <- 0
eff_c <- c(north = 0, south = 0.8, east = -0.5)[d$c]
bb <- ifelse(is.na(d$b), 50, d$b)
d$y <- round(10 + 0.08 * bb + eff_a + eff_c + 0.6 * h + rnorm(n, 0, 2), 3)
d$y[runif(n) < 0.05] <- NA
lp <- -4 + 0.07 * bb + 0.6 * eff_a - 0.3 * h
d$yb <- as.integer(runif(n) < 1 / (1 + exp(-lp)))
write.csv(d, file.path(out, "design_a.csv"), row.names = FALSE, na = "")

# Design L: design A plus a fifth stratum with a single PSU (a "lonely" PSU).
m <- 11
l <- data.frame(stratum = "s5", psu = 1, psu_global = max(d$psu_global) + 1)
l <- l[rep(1, m), ]
l$w <- round(runif(m, 40, 400), 2)
l$x <- sample(c("a", "b", "c", "d"), m, replace = TRUE)
l$a <- sample(1:3, m, replace = TRUE)
l$b <- round(rnorm(m, 55, 10), 1)
l$c <- sample(c("north", "south", "east"), m, replace = TRUE)
l$y <- round(12 + 0.08 * l$b + rnorm(m, 0, 2), 3)
l$yb <- as.integer(runif(m) < 0.5)
write.csv(rbind(d, l), file.path(out, "design_lonely.csv"), row.names = FALSE, na = "")
