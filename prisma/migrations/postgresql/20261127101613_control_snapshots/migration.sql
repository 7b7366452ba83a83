-- CreateTable
CREATE TABLE "ControlSnapshot" (
    "name" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,
    "rows" TEXT NOT NULL,
    "files" BYTEA NOT NULL,
    "rowCount" INTEGER NOT NULL,
    "fileCount" INTEGER NOT NULL,
    "fileBytes" BIGINT NOT NULL,

    CONSTRAINT "ControlSnapshot_pkey" PRIMARY KEY ("name")
);
