from rondo.cli.app import main

main()
