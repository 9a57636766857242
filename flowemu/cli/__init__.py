"""The command line: ``flowemu run | list | sweep | compare | plot | plan | fit | verify``."""
