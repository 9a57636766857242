"""Helpers the test modules share: ``cli`` runs ``flowemu`` in-process and
reads its one error line, ``maxmin_oracle`` is a pure-Python max-min solver,
``grid_oracle`` enumerates minimal paths on grid topologies, ``processes``
starts ``flowemu sweep`` as a child process and follows its workers."""
