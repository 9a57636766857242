"""Analytic backends beside the flow engine: GenModel (its Table 2 formulas and
predictors), its fit to measured times, and the measurements it reads. A backend
looks algorithms up; algorithms never import it."""
