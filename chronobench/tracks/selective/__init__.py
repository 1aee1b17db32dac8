"""RQ4, selective forgetting (``task=selective``): forget what a request names, keep
the rest."""
