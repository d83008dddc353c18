from dbarena.cli import main

main()
