"""The scenarios' shared kit, the floor every story family and product stands on: what a scenario is (`scenario`),
the context it tells its story with (`harness`), the recorder of one Job's objects (`recorder`), the controllers
it starts (`controllers`), what the families share (`toolbox`), the catalogue of every declaration (`catalogue`) and
how a run of them goes (`runner`).  Nothing here imports a family or a product."""
