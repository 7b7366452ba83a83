-- CreateTable
CREATE TABLE "AutoscalerState" (
    "deploymentId" TEXT NOT NULL PRIMARY KEY,
    "upSince" BIGINT,
    "upTo" INTEGER,
    "downSince" BIGINT,
    "downTo" INTEGER,
    "readyAt" BIGINT,
    "wakeRequested" BOOLEAN NOT NULL DEFAULT false
);
