"""GenTree (genmodel-gentree.txt §4.2): the allreduce schedule, its plan
generator (Algorithms 1 and 2) and the tree view it plans on."""
