-- CreateTable
CREATE TABLE "ControlSnapshot" (
    "name" TEXT NOT NULL PRIMARY KEY,
    "createdAt" BIGINT NOT NULL,
    "rows" TEXT NOT NULL,
    "files" BLOB NOT NULL,
    "rowCount" INTEGER NOT NULL,
    "fileCount" INTEGER NOT NULL,
    "fileBytes" BIGINT NOT NULL
);
