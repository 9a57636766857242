"""Analytic backends beside the flow engine: GenModel (its Table 2 formulas and
the predictors of every algorithm it prices) and the measured times it is
fitted to (the fit itself, which also draws its figure, is the study
:mod:`flowemu.study.fit`). A backend looks algorithms up; algorithms never
import it."""
