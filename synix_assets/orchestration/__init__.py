"""Operations that drive Dagster: a build's runs (launch.py in this process, remote.py on a
distributed deployment, drive.py layer after layer), and the bookkeeping of runs a build left
open (runs.py). Above the Dagster compiler, below the application layer, which passes the build
function in rather than being imported from here."""
