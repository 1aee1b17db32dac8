"""The results viewer: a static site from the runs of a results folder
(``python -m chronobench view``) and one query's story in the terminal
(``python -m chronobench show``)."""
