"""The shipped billing database and the script that builds it (``python -m react_lab.data.build``)."""
